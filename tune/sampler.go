package tune

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/c-bata/goptuna"
	"github.com/c-bata/goptuna/cmaes"
	"github.com/servebench/servebench/tune/internal/tpe"
)

// Sampler names.
const (
	SamplerRandom = "random"
	SamplerTPE    = "tpe"
	SamplerCMAES  = "cmaes"
)

// Samplers lists the sampler names for help texts.
var Samplers = []string{SamplerRandom, SamplerTPE, SamplerCMAES}

// sampler asks for points through goptuna's study API. The study's
// storage (SQLite or PostgreSQL) is the record of truth; the samplers see
// a mirror of it in an in-memory goptuna study, refreshed before every
// ask, so every worker's finished trials inform every other worker's
// sampler. Failed and invalid trials enter the mirror as COMPLETE with
// their penalised score, because the models learn only from COMPLETE
// trials.
type sampler struct {
	space *Space
	study *goptuna.Study
	// mirror maps a study trial number to its in-memory trial ID, and
	// told marks the ones whose score the mirror already holds.
	mirror map[int]int
	told   map[int]bool
	// held are the points proposed during the current ask that the
	// study already holds (see askNew and tpeSampler).
	held []Point
}

type discardLogger struct{}

func (discardLogger) Debug(string, ...any) {}
func (discardLogger) Info(string, ...any)  {}
func (discardLogger) Warn(string, ...any)  {}
func (discardLogger) Error(string, ...any) {}

func newSampler(kind string, space *Space, seed int64, startupTrials int) (*sampler, error) {
	opts := []goptuna.StudyOption{
		goptuna.StudyOptionDirection(goptuna.StudyDirectionMaximize),
		goptuna.StudyOptionLogger(discardLogger{}),
	}
	if startupTrials <= 0 {
		startupTrials = 3
	}
	uniform := newUniformSampler(seed)
	smp := &sampler{space: space, mirror: map[int]int{}, told: map[int]bool{}}
	switch kind {
	case SamplerRandom, "":
		opts = append(opts, goptuna.StudyOptionSampler(uniform))
	case SamplerTPE:
		settings := tpe.DefaultSettings()
		settings.StartupTrials = startupTrials
		model, err := tpe.New(seed, settings)
		if err != nil {
			return nil, err
		}
		opts = append(opts, goptuna.StudyOptionSampler(&tpeSampler{smp: smp, model: model}))
	case SamplerCMAES:
		if !space.AllNumeric() || len(space.Sampled()) < 2 {
			return nil, errors.New("--sampler cmaes needs at least two int or float parameters and no choices or booleans; pin those, or use tpe")
		}
		opts = append(opts,
			goptuna.StudyOptionSampler(uniform),
			goptuna.StudyOptionRelativeSampler(cmaes.NewSampler(cmaes.SamplerOptionSeed(seed),
				cmaes.SamplerOptionNStartupTrials(startupTrials))))
	default:
		return nil, fmt.Errorf("--sampler %q: use one of random, tpe, cmaes", kind)
	}
	study, err := goptuna.CreateStudy("tune", opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the sampler: %w", err)
	}
	smp.study = study
	return smp, nil
}

// distribution is the goptuna distribution of a sampled parameter.
func distribution(p Param) any {
	switch p.Kind {
	case KindInt:
		if p.Log {
			return goptuna.LogUniformDistribution{Low: p.Low, High: p.High}
		}
		return goptuna.IntUniformDistribution{Low: int(p.Low), High: int(p.High)}
	case KindFloat:
		if p.Log {
			return goptuna.LogUniformDistribution{Low: p.Low, High: p.High}
		}
		return goptuna.UniformDistribution{Low: p.Low, High: p.High}
	case KindBool:
		return goptuna.IntUniformDistribution{Low: 0, High: 1}
	}
	// Every choice is sampled as its index: the mirror stores numbers,
	// CMA-ES needs them, and tpeSampler reads the choice's kind from the
	// space, not from this distribution.
	return goptuna.IntUniformDistribution{Low: 0, High: len(p.Choices) - 1}
}

// ordinal reports whether p's choices are ascending numbers, so their
// index order is their value order: TPE's Parzen estimators (and CMA-ES)
// then exploit that 48 lies between 32 and 64. Other choices are
// unordered categories to TPE.
func (p Param) ordinal() bool {
	if p.Kind != KindChoice || len(p.Choices) < 2 {
		return false
	}
	prev := math.Inf(-1)
	for _, c := range p.Choices {
		f, err := strconv.ParseFloat(c, 64)
		if err != nil || f <= prev {
			return false
		}
		prev = f
	}
	return true
}

// domain is p as TPE sees it. Booleans and choices are their indices;
// ascending numeric choices keep their order as an integer range.
func domain(p Param) tpe.Domain {
	switch {
	case p.Kind == KindInt:
		return tpe.Domain{Low: p.Low, High: p.High, Log: p.Log, Integer: true}
	case p.Kind == KindFloat:
		return tpe.Domain{Low: p.Low, High: p.High, Log: p.Log}
	case p.Kind == KindBool:
		return tpe.Domain{Choices: 2}
	case p.ordinal():
		return tpe.Domain{Low: 0, High: float64(len(p.Choices) - 1), Integer: true}
	}
	return tpe.Domain{Choices: len(p.Choices)}
}

// tpeSampler is goptuna's sampler interface over our TPE: it reads the
// mirror's finished trials, in study order (the order of their study
// trial numbers, which several workers' trials reach the mirror out of).
type tpeSampler struct {
	smp   *sampler
	model *tpe.Sampler
}

func (s *tpeSampler) Sample(study *goptuna.Study, _ goptuna.FrozenTrial, name string, _ any) (float64, error) {
	p, ok := s.smp.space.Lookup(name)
	if !ok {
		return 0, fmt.Errorf("tpe: %s is not in the search space", name)
	}
	trials, err := study.GetTrials()
	if err != nil {
		return 0, err
	}
	number := make(map[int]int, len(s.smp.mirror))
	for n, id := range s.smp.mirror {
		number[id] = n
	}
	type numbered struct {
		number int
		tpe.Observation
	}
	var finished []numbered
	for _, t := range trials {
		v, ok := t.InternalParams[name]
		if t.State != goptuna.TrialStateComplete || !ok {
			continue
		}
		finished = append(finished, numbered{number[t.ID], tpe.Observation{Value: v, Score: t.Value}})
	}
	slices.SortStableFunc(finished, func(a, b numbered) int { return a.number - b.number })
	history := make([]tpe.Observation, len(finished))
	worst := math.Inf(1)
	for i, f := range finished {
		history[i] = f.Observation
		worst = math.Min(worst, f.Score)
	}
	// A proposal the study already holds comes back as a trial with the
	// worst score so far (Optuna's "constant liar", here for repeats):
	// in a discrete space the ratio's maximum is often the incumbent
	// itself, and the lie moves the next proposal to its neighbourhood
	// instead of to the same point again.
	for _, held := range s.smp.held {
		if v, ok := internal(p, held[name]); ok && len(finished) > 0 {
			history = append(history, tpe.Observation{Value: v, Score: worst})
		}
	}
	return s.model.Suggest(domain(p), history)
}

// internal is v's goptuna internal representation under p.
func internal(p Param, v string) (float64, bool) {
	switch p.Kind {
	case KindInt, KindFloat:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil && f >= p.Low && f <= p.High
	case KindBool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return 0, false
		}
		if b {
			return 1, true
		}
		return 0, true
	}
	i := slices.Index(p.Choices, v)
	return float64(i), i >= 0
}

// sync tells the mirror about finished trials it has not seen.
func (s *sampler) sync(trials []Trial) error {
	for _, t := range trials {
		if !t.State.finished() || s.told[t.Number] {
			continue
		}
		if id, ok := s.mirror[t.Number]; ok {
			if err := s.study.Storage.SetTrialValue(id, t.Score); err != nil {
				return err
			}
			if err := s.study.Storage.SetTrialState(id, goptuna.TrialStateComplete); err != nil {
				return err
			}
			s.told[t.Number] = true
			continue
		}
		frozen := goptuna.FrozenTrial{
			State: goptuna.TrialStateComplete, Value: t.Score,
			DatetimeStart: time.Unix(0, 0), DatetimeComplete: time.Unix(0, 0),
			IntermediateValues: map[int]float64{}, InternalParams: map[string]float64{},
			Params: map[string]any{}, Distributions: map[string]any{},
			UserAttrs: map[string]string{}, SystemAttrs: map[string]string{},
		}
		for _, p := range s.space.Sampled() {
			ir, ok := internal(p, t.Params[p.Name])
			if !ok {
				continue // a value outside today's space tells this space nothing
			}
			d := distribution(p)
			ext, err := goptuna.ToExternalRepresentation(d, ir)
			if err != nil {
				return err
			}
			frozen.InternalParams[p.Name], frozen.Params[p.Name], frozen.Distributions[p.Name] = ir, ext, d
		}
		id, err := s.study.Storage.CloneTrial(s.study.ID, frozen)
		if err != nil {
			return fmt.Errorf("mirroring trial %d for the sampler: %w", t.Number, err)
		}
		s.mirror[t.Number], s.told[t.Number] = id, true
	}
	return nil
}

// ask samples a point; bind ties it to its study trial number once the
// storage has assigned one.
func (s *sampler) ask() (Point, int, error) {
	id, err := s.study.Storage.CreateNewTrial(s.study.ID)
	if err != nil {
		return nil, 0, err
	}
	trial := goptuna.Trial{Study: s.study, ID: id}
	if err := trial.CallRelativeSampler(); err != nil {
		return nil, 0, fmt.Errorf("sampler: %w", err)
	}
	p := Point{}
	for _, prm := range s.space.Params {
		if prm.Kind == KindPinned {
			p[prm.Name] = prm.Value
			continue
		}
		v, err := s.suggest(&trial, prm)
		if err != nil {
			return nil, 0, fmt.Errorf("sampling %s: %w", prm.Name, err)
		}
		p[prm.Name] = v
	}
	return p, id, nil
}

func (s *sampler) suggest(t *goptuna.Trial, p Param) (string, error) {
	switch p.Kind {
	case KindInt:
		if p.Log {
			f, err := t.SuggestLogFloat(p.Name, p.Low, p.High)
			return formatValue(p, math.Min(math.Max(math.Round(f), p.Low), p.High)), err
		}
		i, err := t.SuggestInt(p.Name, int(p.Low), int(p.High))
		return strconv.Itoa(i), err
	case KindFloat:
		var f float64
		var err error
		if p.Log {
			f, err = t.SuggestLogFloat(p.Name, p.Low, p.High)
		} else {
			f, err = t.SuggestFloat(p.Name, p.Low, p.High)
		}
		return formatValue(p, f), err
	case KindBool:
		i, err := t.SuggestInt(p.Name, 0, 1)
		return strconv.FormatBool(i == 1), err
	}
	i, err := t.SuggestInt(p.Name, 0, len(p.Choices)-1)
	if err != nil {
		return "", err
	}
	return p.Choices[i], nil
}

// bind records that in-memory trial id became study trial number, and
// stores the point actually run (after conditions moved it).
func (s *sampler) bind(id, number int, p Point) error {
	s.mirror[number] = id
	for _, prm := range s.space.Sampled() {
		if ir, ok := internal(prm, p[prm.Name]); ok {
			if err := s.study.Storage.SetTrialParam(id, prm.Name, ir, distribution(prm)); err != nil {
				return err
			}
		}
	}
	return nil
}
