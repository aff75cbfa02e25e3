package runspec

import (
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Kind is what a spec runs.
type Kind string

// Kinds of run. Merge is not a run: it names merge's output flags.
const (
	Bench Kind = "bench"
	Sim   Kind = "sim"
	Serve Kind = "serve"
	Merge Kind = "merge"
)

// Spec is the typed description of one bench, sim or serve run. Its
// sections are the flag groups of the command; a kind uses some of them:
//
//	bench: Target, Client, Workload, Output, Shard
//	sim:   Workload, Engine, Topology, Simulation, Output, Shard
//	serve: Engine, Server
//
// A spec runs nothing: bench, sim and serve take it.
type Spec struct {
	Kind Kind

	Target     Target
	Client     Client
	Workload   Workload
	Engine     Engine
	Topology   Topology
	Simulation Simulation
	Server     Server
	Output     Output
	Shard      Shard

	// Env is what the run reads from its environment, never written back.
	Env Env

	// set holds flags given explicitly, even at their default value.
	set map[string]bool
}

// section is one flag group of a spec, registered on its own flag set so
// YAML can keep the groups apart.
type section struct {
	name     string
	register func(*pflag.FlagSet)
}

func (s *Spec) sections() []section {
	target := section{"target", s.Target.Register}
	client := section{"client", s.Client.Register}
	work := section{"workload", s.Workload.Register}
	eng := section{"engine", s.Engine.Register}
	topo := section{"topology", s.Topology.Register}
	simu := section{"simulation", s.Simulation.Register}
	srv := section{"server", s.Server.Register}
	out := section{"output", func(fs *pflag.FlagSet) { s.Output.Register(fs, s.Kind) }}
	shard := section{"shard", func(fs *pflag.FlagSet) { s.Shard.Register(fs, s.Kind) }}
	switch s.Kind {
	case Bench:
		return []section{target, client, work, out, shard}
	case Sim:
		return []section{eng, topo, simu, work, out, shard}
	case Serve:
		return []section{eng, srv}
	case Merge:
		return []section{out}
	}
	return nil
}

// New is a spec of kind with every flag at its default.
func New(kind Kind) *Spec {
	s := &Spec{Kind: kind}
	s.Register(pflag.NewFlagSet(string(kind), pflag.ContinueOnError))
	return s
}

// Register adds the flags of the spec's kind to fs, bound to the spec's
// fields (which take their defaults).
func (s *Spec) Register(fs *pflag.FlagSet) {
	for _, sec := range s.sections() {
		sec.register(fs)
	}
}

// MarkChanged records the flags fs saw on its command line as given, so
// a value typed at its default still counts as chosen.
func (s *Spec) MarkChanged(fs *pflag.FlagSet) {
	fs.Visit(func(f *pflag.Flag) { s.markSet(f.Name) })
}

func (s *Spec) markSet(name string) {
	if s.set == nil {
		s.set = map[string]bool{}
	}
	s.set[name] = true
}

// bound registers the spec's flags on a copy of the spec holding its
// values: the flags report the spec's values, and their DefValue the
// defaults. Setting a flag changes the copy, not s.
func (s *Spec) bound() (*Spec, []*pflag.FlagSet) {
	c := &Spec{Kind: s.Kind}
	secs := c.sections()
	sets := make([]*pflag.FlagSet, len(secs))
	for i, sec := range secs {
		sets[i] = newFlagSet(sec.name)
		sec.register(sets[i])
	}
	*c = *s.Clone()
	return c, sets
}

func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// Changed reports whether a flag was given or its value differs from the
// default: what a command line would have to say to rebuild the spec.
func (s *Spec) Changed(name string) bool {
	if s.set[name] {
		return true
	}
	_, sets := s.bound()
	for _, fs := range sets {
		if f := fs.Lookup(name); f != nil {
			return f.Value.String() != f.DefValue
		}
	}
	return false
}

// changedFunc is Changed computed once for every flag, for code that asks
// about many.
func (s *Spec) changedFunc() func(string) bool {
	changed := map[string]bool{}
	_, sets := s.bound()
	for _, fs := range sets {
		fs.VisitAll(func(f *pflag.Flag) {
			if s.set[f.Name] || f.Value.String() != f.DefValue {
				changed[f.Name] = true
			}
		})
	}
	return func(name string) bool { return changed[name] }
}

// ChangedFunc is Changed for callers that ask about many flags.
func (s *Spec) ChangedFunc() func(string) bool { return s.changedFunc() }

// HasFlag reports whether the spec's kind takes --name.
func (s *Spec) HasFlag(name string) bool {
	_, sets := s.bound()
	for _, fs := range sets {
		if fs.Lookup(name) != nil {
			return true
		}
	}
	return false
}

// Set sets --name to value as the command line would, and marks it given.
func (s *Spec) Set(name, value string) error { return s.SetValues(name, value) }

// SetValues sets --name as a command line repeating it once per value (a
// list flag takes them all; another flag keeps the last), and marks it
// given.
func (s *Spec) SetValues(name string, values ...string) error {
	c, sets := s.bound()
	for _, fs := range sets {
		if fs.Lookup(name) == nil {
			continue
		}
		for _, value := range values {
			if err := fs.Set(name, value); err != nil {
				return fmt.Errorf("--%s %q: %w", name, value, unwrapSetError(err))
			}
		}
		c.markSet(name)
		*s = *c
		return nil
	}
	return unknownFlag(s.Kind, name, s.flagNames())
}

// Overlay sets on s every flag given on fs's command line (except the
// names in skip), as if typed after what s already holds: a spec read
// from a file, changed by flags.
func (s *Spec) Overlay(fs *pflag.FlagSet, skip ...string) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil || slices.Contains(skip, f.Name) {
			return
		}
		err = s.SetValues(f.Name, flagValues(f, true)...)
	})
	return err
}

// unwrapSetError drops pflag's "invalid argument ... for ... flag:" prefix,
// which repeats what the caller names itself.
func unwrapSetError(err error) error {
	msg := err.Error()
	if i := strings.LastIndex(msg, " flag: "); i >= 0 && strings.HasPrefix(msg, "invalid argument") {
		return fmt.Errorf("%s", msg[i+len(" flag: "):])
	}
	return err
}

func (s *Spec) flagNames() []string {
	var names []string
	_, sets := s.bound()
	for _, fs := range sets {
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
	}
	return names
}

// Parse reads a command line of kind, in vLLM's forms (multi-value
// flags, -tp and -pp), into a spec. An unknown flag is refused with the
// nearest known one.
func Parse(kind Kind, args []string) (*Spec, error) {
	s := &Spec{Kind: kind}
	fs := newFlagSet(string(kind))
	s.Register(fs)
	if err := fs.Parse(CLIArgs(args)); err != nil {
		return nil, ParseError(kind, fs, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%s: unexpected argument %q: give flags only", kind, fs.Arg(0))
	}
	s.MarkChanged(fs)
	return s, nil
}

// Args writes the spec back as a command line that Parse reads into the
// same spec: every flag given or away from its default, as --name=value
// (a true boolean as --name), in section order. Secrets are written as
// they are: the result is for running, never for a log; see
// RedactedArgs.
func (s *Spec) Args() []string { return s.args(true) }

// RedactedArgs is Args with every secret masked, for logs, manifests and
// messages.
func (s *Spec) RedactedArgs() []string { return s.args(false) }

func (s *Spec) args(reveal bool) []string {
	changed := s.changedFunc()
	_, sets := s.bound()
	var out []string
	for _, fs := range sets {
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Hidden || !changed(f.Name) {
				return
			}
			if f.Value.Type() == "bool" && f.Value.String() == "true" {
				out = append(out, "--"+f.Name)
				return
			}
			for _, v := range flagValues(f, reveal) {
				out = append(out, "--"+f.Name+"="+v)
			}
		})
	}
	return out
}

// Clone is a deep copy: changing the clone never changes s.
func (s *Spec) Clone() *Spec {
	c := deepCopy(reflect.ValueOf(s).Elem()).Interface().(Spec)
	c.set = nil
	for name := range s.set {
		c.markSet(name)
	}
	return &c
}

// deepCopy copies v, following slices, maps and pointers. Func fields
// (Env.Now) are shared: they hold no data of the spec.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Elem().Type())
		p.Elem().Set(deepCopy(v.Elem()))
		return p
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			c.SetMapIndex(iter.Key(), deepCopy(iter.Value()))
		}
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v) // unexported fields (Secret's value) are plain data
		for i := range v.NumField() {
			if c.Field(i).CanSet() {
				c.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return c
	}
	return v
}

// unknownFlag names the nearest flag the kind takes.
func unknownFlag(kind Kind, name string, known []string) error {
	if near := nearest(name, known); near != "" {
		return fmt.Errorf("%s has no flag --%s: did you mean --%s?", kind, name, near)
	}
	return fmt.Errorf("%s has no flag --%s; see servebench %s --help", kind, name, kind)
}

// nearest is the known name closest to name by edit distance, when close
// enough to be a typo.
func nearest(name string, known []string) string {
	best, bestDist := "", len(name)/3+2
	for _, k := range known {
		if d := editDistance(name, k); d < bestDist || d == bestDist && best != "" && k < best {
			best, bestDist = k, d
		}
	}
	if best != "" && editDistance(name, best) > len(name)/3+1 {
		return ""
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// ParseError restates a flag-parsing error of a kind's flag set in one
// line naming the input and the fix: an unknown flag gets the nearest
// known one.
func ParseError(kind Kind, fs *pflag.FlagSet, err error) error {
	msg := err.Error()
	var name string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		name = strings.TrimPrefix(msg, "unknown flag: --")
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		return fmt.Errorf("%s: %s; flags are spelled --name", kind, msg)
	default:
		return err
	}
	var known []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			known = append(known, f.Name)
		}
	})
	slices.Sort(known)
	return unknownFlag(kind, name, known)
}
