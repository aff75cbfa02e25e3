package workload

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

var inf = math.Inf(1)

func TestArrivalsValidate(t *testing.T) {
	tests := []struct {
		name string
		a    Arrivals
		want string // "" means valid
	}{
		{"defaults", DefaultArrivals(), ""},
		{"poisson", Arrivals{Rate: 10, Burstiness: 1}, ""},
		{"constant", Arrivals{Rate: 10, Burstiness: inf}, ""},
		{"zero rate", Arrivals{Rate: 0, Burstiness: 1}, "request_rate 0: must be > 0"},
		{"negative rate", Arrivals{Rate: -2, Burstiness: 1}, "request_rate -2"},
		{"NaN rate", Arrivals{Rate: math.NaN(), Burstiness: 1}, "request_rate NaN"},
		{"zero burstiness", Arrivals{Rate: 1, Burstiness: 0}, "burstiness 0: must be > 0"},
		{"NaN burstiness", Arrivals{Rate: 1, Burstiness: math.NaN()}, "burstiness NaN"},
		{"unknown ramp", Arrivals{Rate: inf, Burstiness: 1, RampUp: "step", RampStart: 1, RampEnd: 2}, `ramp_up_strategy "step": must be linear or exponential`},
		{"ramp with a finite rate", Arrivals{Rate: 5, Burstiness: 1, RampUp: RampLinear, RampStart: 1, RampEnd: 2}, "request_rate 5: leave it at inf with ramp_up_strategy"},
		{"linear ramp from zero", Arrivals{Rate: inf, Burstiness: 1, RampUp: RampLinear, RampStart: 0, RampEnd: 2}, "ramp_up_start_rps 0: must be a finite rate > 0"},
		{"exponential ramp from zero", Arrivals{Rate: inf, Burstiness: 1, RampUp: RampExponential, RampStart: 0, RampEnd: 2}, "ramp_up_start_rps 0"},
		{"ramp down", Arrivals{Rate: inf, Burstiness: 1, RampUp: RampLinear, RampStart: 5, RampEnd: 2}, "ramp_up_start_rps 5: must not exceed ramp_up_end_rps 2"},
		{"infinite ramp end", Arrivals{Rate: inf, Burstiness: 1, RampUp: RampLinear, RampStart: 5, RampEnd: inf}, "ramp_up_end_rps +Inf"},
		{"flat ramp", Arrivals{Rate: inf, Burstiness: 1, RampUp: RampExponential, RampStart: 3, RampEnd: 3}, ""},
		{"ramp values without a strategy", Arrivals{Rate: inf, Burstiness: 1, RampStart: 1, RampEnd: 2}, "need ramp_up_strategy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.a.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n")):
				t.Fatalf("Validate() = %v, want one line containing %q", err, tt.want)
			}
			if tt.want != "" {
				got, err := Schedule(3, tt.a)
				if err == nil || got != nil || err.Error() != tt.a.Validate().Error() {
					t.Errorf("Schedule with invalid arrivals = %v, %v; want nil and Validate's error", got, err)
				}
			}
		})
	}
}

func secondsOf(d []time.Duration) []float64 {
	out := make([]float64, len(d))
	for i, x := range d {
		out[i] = x.Seconds()
	}
	return out
}

func TestScheduleModes(t *testing.T) {
	tests := []struct {
		name string
		n    int
		a    Arrivals
		want []time.Duration // nil: only the generic checks
	}{
		{"infinite rate: all at once", 5, DefaultArrivals(), make([]time.Duration, 5)},
		{"constant gaps, first request waits one", 4, Arrivals{Rate: 4, Burstiness: inf},
			[]time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second}},
		{"linear ramp, constant gaps", 3, Arrivals{Rate: inf, Burstiness: inf, RampUp: RampLinear, RampStart: 1, RampEnd: 3},
			// rates 1, 2, 3: gaps 1, 1/2, 1/3, no rescale.
			[]time.Duration{time.Second, 1500 * time.Millisecond, seconds(1 + 0.5 + 1.0/3)}},
		{"exponential ramp, constant gaps", 3, Arrivals{Rate: inf, Burstiness: inf, RampUp: RampExponential, RampStart: 1, RampEnd: 4},
			// rates 1, 2, 4.
			[]time.Duration{time.Second, 1500 * time.Millisecond, 1750 * time.Millisecond}},
		{"one request", 1, Arrivals{Rate: 2, Burstiness: 1}, []time.Duration{500 * time.Millisecond}},
		{"no requests", 0, Arrivals{Rate: 2, Burstiness: 1}, []time.Duration{}},
		{"poisson", 500, Arrivals{Rate: 50, Burstiness: 1, Seed: 3}, nil},
		{"bursty gamma", 500, Arrivals{Rate: 50, Burstiness: 0.25, Seed: 3}, nil},
		{"steady gamma", 500, Arrivals{Rate: 50, Burstiness: 8, Seed: 3}, nil},
		{"poisson ramp", 500, Arrivals{Rate: inf, Burstiness: 1, RampUp: RampLinear, RampStart: 10, RampEnd: 100, Seed: 3}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustSchedule(t, tt.n, tt.a)
			if len(got) != tt.n {
				t.Fatalf("got %d offsets, want %d", len(got), tt.n)
			}
			if tt.want != nil && !slices.Equal(got, tt.want) {
				t.Fatalf("offsets\n got %v\nwant %v", got, tt.want)
			}
			if !slices.IsSorted(got) {
				t.Errorf("offsets decrease: %v", secondsOf(got))
			}
			if tt.n == 0 || math.IsInf(tt.a.Rate, 1) && tt.a.RampUp == "" {
				return
			}
			if got[0] <= 0 {
				t.Errorf("first offset %v: the first request must wait one gap", got[0])
			}
			if tt.a.RampUp == "" {
				if want := seconds(float64(tt.n) / tt.a.Rate); got[tt.n-1] != want {
					t.Errorf("last offset %v, want n/rate = %v (vLLM's rescale)", got[tt.n-1], want)
				}
			}
		})
	}
}

func TestScheduleRampSpeedsUp(t *testing.T) {
	n := 20000
	got := mustSchedule(t, n, Arrivals{Rate: inf, Burstiness: 1, RampUp: RampLinear, RampStart: 10, RampEnd: 1000, Seed: 1})
	firstTenth := (got[n/10] - got[0]).Seconds()
	lastTenth := (got[n-1] - got[n-1-n/10]).Seconds()
	// Mean rates over the first and last tenth: ~ (10+109)/2 and ~ (901+1000)/2.
	firstRate := float64(n/10) / firstTenth
	lastRate := float64(n/10) / lastTenth
	if firstRate < 40 || firstRate > 80 || lastRate < 850 || lastRate > 1050 {
		t.Errorf("ramp 10→1000 rps: first tenth at %.0f rps, last tenth at %.0f rps; want about 60 and 950", firstRate, lastRate)
	}
}

func TestScheduleDeterministic(t *testing.T) {
	a := Arrivals{Rate: 20, Burstiness: 0.7, Seed: 42}
	if !slices.Equal(mustSchedule(t, 100, a), mustSchedule(t, 100, a)) {
		t.Fatal("same seed, different schedules")
	}
	b := a
	b.Seed = 43
	if slices.Equal(mustSchedule(t, 100, a), mustSchedule(t, 100, b)) {
		t.Error("seeds 42 and 43 give the same schedule")
	}
}

func TestScheduleSaturates(t *testing.T) {
	got := mustSchedule(t, 3, Arrivals{Rate: 1e-12, Burstiness: inf})
	for i, d := range got {
		if d <= 0 || (i > 0 && d < got[i-1]) {
			t.Fatalf("offsets %v: overflowed instead of saturating", got)
		}
	}
	if got[2] != math.MaxInt64 {
		t.Errorf("last offset %v, want the largest Duration", got[2])
	}
}

func TestAssign(t *testing.T) {
	reqs := make([]Request, 3)
	Assign(reqs, []time.Duration{1, 2, 3, 4})
	Assign(reqs[:3], []time.Duration{5, 6})
	want := []time.Duration{5, 6, 3}
	for i, r := range reqs {
		if r.Arrival != want[i] {
			t.Errorf("request %d: Arrival %v, want %v", i, r.Arrival, want[i])
		}
	}
}

func meanCV(xs []float64) (mean, cv float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(xs))) / mean
}

// TestGammaMoments checks the Marsaglia–Tsang sampler against the gap
// distribution vLLM uses: mean 1/rate and coefficient of variation
// 1/sqrt(burstiness), with a fixed seed.
func TestGammaMoments(t *testing.T) {
	const n = 200000
	for _, tt := range []struct{ rate, burstiness float64 }{{1, 1}, {40, 1}, {5, 0.2}, {5, 0.5}, {2, 2.5}, {100, 16}} {
		rng := newRand(11, arrivalStream)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = gamma(rng, tt.burstiness, 1/(tt.rate*tt.burstiness))
			if xs[i] < 0 || math.IsNaN(xs[i]) {
				t.Fatalf("rate %g burstiness %g: sample %g", tt.rate, tt.burstiness, xs[i])
			}
		}
		mean, cv := meanCV(xs)
		wantMean, wantCV := 1/tt.rate, 1/math.Sqrt(tt.burstiness)
		// With 2e5 samples the standard errors are well under 1% of the
		// mean and 2% of the CV even for the burstiest shape.
		if math.Abs(mean-wantMean)/wantMean > 0.02 {
			t.Errorf("rate %g burstiness %g: mean %.5g, want %.5g", tt.rate, tt.burstiness, mean, wantMean)
		}
		if math.Abs(cv-wantCV)/wantCV > 0.03 {
			t.Errorf("rate %g burstiness %g: CV %.4f, want %.4f", tt.rate, tt.burstiness, cv, wantCV)
		}
	}
}

// TestSchedulePoissonShape checks the scheduled gaps, after the rescale: the
// CV is 1 and P(gap > mean) is e^-1, as for exponential gaps.
func TestSchedulePoissonShape(t *testing.T) {
	const n = 100000
	offsets := mustSchedule(t, n, Arrivals{Rate: 250, Burstiness: 1, Seed: 5})
	gaps := make([]float64, n)
	prev := time.Duration(0)
	for i, o := range offsets {
		gaps[i] = (o - prev).Seconds()
		prev = o
	}
	mean, cv := meanCV(gaps)
	if math.Abs(mean-1.0/250)*250 > 1e-6 {
		t.Errorf("mean gap %g, want exactly 1/250 after the rescale", mean)
	}
	if math.Abs(cv-1) > 0.02 {
		t.Errorf("CV of gaps %.4f, want 1", cv)
	}
	above := 0
	for _, g := range gaps {
		if g > mean {
			above++
		}
	}
	if p := float64(above) / n; math.Abs(p-math.Exp(-1)) > 0.01 {
		t.Errorf("P(gap > mean) = %.4f, want e^-1 = %.4f", p, math.Exp(-1))
	}
}

// mustSchedule is Schedule for arrivals the test knows are valid.
func mustSchedule(t testing.TB, n int, a Arrivals) []time.Duration {
	t.Helper()
	offsets, err := Schedule(n, a)
	if err != nil {
		t.Fatal(err)
	}
	return offsets
}
