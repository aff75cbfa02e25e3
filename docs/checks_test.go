package docs

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// conclusions check, for a block named by its id, what the page's prose
// concludes from the block's output, so a sentence cannot outlive the
// numbers behind it: the check fails when the conclusion no longer holds.
// page holds the outputs of the page's blocks run so far, by id.
var conclusions = map[string]func(out string, page map[string]string) error{
	"sim-pp-vs-tp": func(out string, _ map[string]string) error {
		pp, tp := sections(out, "== -pp 2"), sections(out, "== -tp 2")
		if err := more(tp, pp, "Output token throughput (tok/s)", "-tp 2", "-pp 2"); err != nil {
			return err
		}
		return more(pp, tp, "Mean TPOT (ms)", "-pp 2", "-tp 2")
	},
	"releases-host": func(out string, _ map[string]string) error {
		v054, v063, slow := sections(out, "== 0.5.4"), sections(out, "== 0.6.3"), sections(out, "== 0.6.3 --host-speed 0.7")
		t054, t063 := fig(v054, "Request throughput (req/s)"), fig(v063, "Request throughput (req/s)")
		if t054 >= 0.95*32 || t063 >= 0.95*32 || t054 >= t063 {
			return fmt.Errorf("throughput 0.5.4 %v, 0.6.3 %v req/s: the page says neither keeps up with 32 and 0.5.4 falls further behind", t054, t063)
		}
		if h := fig(v054, "Host-bound step time (%)"); h <= 50 {
			return fmt.Errorf("0.5.4's host-bound step time is %v%%: the page says most of it", h)
		}
		if a, b := fig(v054, "Mean TTFT (ms)"), fig(v063, "Mean TTFT (ms)"); b >= 0.25*a {
			return fmt.Errorf("mean TTFT 0.5.4 %v ms, 0.6.3 %v ms: the page says 0.6.3's is a fraction of 0.5.4's", a, b)
		}
		if a, b := fig(v063, "Mean TPOT (ms)"), fig(slow, "Mean TPOT (ms)"); b <= 1.33*a {
			return fmt.Errorf("mean TPOT %v ms at the default host, %v at --host-speed 0.7: the page says over a third more", a, b)
		}
		return nil
	},
	"releases-memory": func(out string, _ map[string]string) error {
		few := strings.ReplaceAll(sections(out, "== --max-num-seqs 256")["GPU KV cache size"], ",", "")
		many := strings.ReplaceAll(sections(out, "== --max-num-seqs 1024")["GPU KV cache size"], ",", "")
		a, err1 := strconv.Atoi(few)
		b, err2 := strconv.Atoi(many)
		if err1 != nil || err2 != nil || b >= a {
			return fmt.Errorf("KV cache %q tokens at 256 sequences, %q at 1024: the page says more sequences leave fewer blocks", few, many)
		}
		return nil
	},
	"topo-pd-arms": func(out string, _ map[string]string) error {
		t, err := mdTable(out)
		if err != nil {
			return err
		}
		for _, l := range []string{"256", "1024"} {
			for _, r := range []string{"4", "12", "24"} {
				at := []string{"random-input-len", l, "request-rate", r}
				colo1, colo2 := t.find("colocated 1 GPU", at...), t.find("colocated 2 replicas rr (2 GPUs)", at...)
				rdma, tcp := t.find("1P1D rdma (2 GPUs)", at...), t.find("1P1D tcp (2 GPUs)", at...)
				for _, pd := range []row{rdma, tcp} {
					if err := ratioAtMost(pd, pd, "P99 ITL (ms)", "Median ITL (ms)", 1.1); err != nil {
						return fmt.Errorf("at %s tokens, %s req/s: %w (the page says 1P1D's P99 ITL stays within 10%% of the median)", l, r, err)
					}
					if err := ratioAbove(pd, colo1, "Mean TTFT (ms)", 1); err != nil {
						return fmt.Errorf("at %s tokens, %s req/s: %w (the page says 1P1D's mean TTFT is higher than one GPU's)", l, r, err)
					}
					if err := ratioAbove(pd, colo2, "Mean TTFT (ms)", 1); err != nil {
						return fmt.Errorf("at %s tokens, %s req/s: %w (the page says two replicas beat 1P1D on mean TTFT)", l, r, err)
					}
				}
				if err := ratioAbove(tcp, rdma, "Mean TTFT (ms)", 1); err != nil {
					return fmt.Errorf("at %s tokens, %s req/s: %w (the page says RDMA beats TCP)", l, r, err)
				}
				if err := ratioAtMost(tcp, rdma, "Mean TTFT (ms)", "Mean TTFT (ms)", 1.5); err != nil {
					return fmt.Errorf("at %s tokens, %s req/s: %w (the page says within 1.5×)", l, r, err)
				}
			}
		}
		at := []string{"random-input-len", "1024", "request-rate", "24"}
		rdma := t.find("1P1D rdma (2 GPUs)", at...)
		if err := ratioAbove(t.find("colocated 1 GPU", at...), rdma, "P99 ITL (ms)", 3); err != nil {
			return fmt.Errorf("at 1024 tokens, 24 req/s: %w (the page says more than three times)", err)
		}
		return ratioAbove(t.find("colocated 2 replicas rr (2 GPUs)", at...), rdma, "P99 ITL (ms)", 1)
	},
	"topo-routing": func(out string, _ map[string]string) error {
		best := sections(out, "== prefix-aware")
		for _, r := range []string{"rr", "least-loaded", "random"} {
			other := sections(out, "== "+r)
			if err := more(best, other, "Prefix cache hit rate (%)", "prefix-aware", r); err != nil {
				return err
			}
			if err := more(other, best, "Mean TTFT (ms)", r, "prefix-aware"); err != nil {
				return fmt.Errorf("%w (the page says prefix-aware has the lowest)", err)
			}
		}
		return nil
	},
	"topo-nodes-7b": func(out string, _ map[string]string) error {
		t, err := mdTable(out)
		if err != nil {
			return err
		}
		const tpot = "Median TPOT (ms)"
		for _, gpu := range []string{"A10", "L4"} {
			at := func(n string) []string { return []string{"gpu", gpu, "num-prompts", n} }
			ratio := func(a, b, n string) float64 {
				x, _ := t.find(a, at(n)...).num(tpot)
				y, _ := t.find(b, at(n)...).num(tpot)
				return x / y
			}
			small, large := ratio("TP2 2 nodes TCP 25GbE", "TP2 one node", "10"), ratio("TP2 2 nodes TCP 25GbE", "TP2 one node", "100")
			if !(small > 1.1 && large > small) {
				return fmt.Errorf("%s: TP over TCP costs %.2f× at 10 prompts and %.2f× at 100: the page says it slows every step, more as the batch grows", gpu, small, large)
			}
			for _, n := range []string{"10", "50", "100"} {
				if r := ratio("TP2 2 nodes RoCE 200G", "TP2 one node", n); !(r <= 1.25) {
					return fmt.Errorf("%s at %s prompts: TP over RoCE costs %.2f×: the page says within 25%%", gpu, n, r)
				}
				if r := ratio("PP2 2 nodes TCP 25GbE", "PP2 one node", n); !(r <= 1.025) {
					return fmt.Errorf("%s at %s prompts: PP over TCP costs %.3f×: the page says within 2.5%%", gpu, n, r)
				}
			}
			if r := ratio("PP2 one node", "TP2 one node", "10"); !(r > 1.5) {
				return fmt.Errorf("%s at 10 prompts: PP2 is %.2f× TP2's median TPOT: the page says over 1.5×", gpu, r)
			}
		}
		for _, n := range []string{"50", "100"} {
			at := []string{"gpu", "A10", "num-prompts", n}
			if err := ratioAbove(t.find("TP2 2 nodes TCP 25GbE", at...), t.find("PP2 2 nodes TCP 25GbE", at...), tpot, 1); err != nil {
				return fmt.Errorf("A10 at %s prompts: %w (the page says PP over TCP overtakes TP over TCP)", n, err)
			}
		}
		return nil
	},
	"topo-nodes-70b": func(out string, _ map[string]string) error {
		t, err := mdTable(out)
		if err != nil {
			return err
		}
		const tpot = "Median TPOT (ms)"
		for _, n := range []string{"10", "50", "100"} {
			at := []string{"num-prompts", n}
			if err := ratioAtMost(t.find("TP8xPP2 TCP 100GbE", at...), t.find("TP8xPP2 IB 400G", at...), tpot, tpot, 1.03); err != nil {
				return fmt.Errorf("%s prompts: %w (the page says TP8×PP2 over TCP stays within 3%% of IB)", n, err)
			}
			if err := ratioAbove(t.find("TP16 TCP 100GbE", at...), t.find("TP16 IB 400G", at...), tpot, 2); err != nil {
				return fmt.Errorf("%s prompts: %w (the page says TP16 over TCP loses more than 2×)", n, err)
			}
		}
		at := []string{"num-prompts", "100"}
		return ratioAbove(t.find("TP16 IB 400G", at...), t.find("TP8xPP2 IB 400G", at...), tpot, 1)
	},
	"sweep-prompts": func(out string, _ map[string]string) error {
		rows, err := termTable(out)
		if err != nil {
			return err
		}
		at := func(n, col string) float64 {
			v, err := rows["num-prompts="+n].num(col)
			if err != nil {
				return math.NaN()
			}
			return v
		}
		if a, b := at("256", "Request throughput (req/s)"), at("2048", "Request throughput (req/s)"); !(b < 1.25*a) {
			return fmt.Errorf("throughput %v req/s at 256 prompts, %v at 2048: the page says it levels off", a, b)
		}
		for _, n := range [][2]string{{"256", "512"}, {"512", "1024"}, {"1024", "2048"}} {
			a, b := at(n[0], "Median TTFT (ms)"), at(n[1], "Median TTFT (ms)")
			if !(b > 1.5*a && b < 3*a) {
				return fmt.Errorf("median TTFT %v ms at %s prompts, %v at %s: the page says each doubling roughly doubles it", a, n[0], b, n[1])
			}
		}
		return nil
	},
	"report-setups": func(out string, _ map[string]string) error {
		rows, err := termTable(out)
		if err != nil {
			return err
		}
		few, many := rows["seqs8: request-rate=20"], rows["seqs256: request-rate=20"]
		few["Label"], many["Label"] = "8 sequences", "256 sequences"
		return ratioAbove(few, many, "P99 TTFT (ms)", 5)
	},
	"tune-sim": func(out string, _ map[string]string) error {
		trial := regexp.MustCompile(`(?m)^(\d+) +COMPLETE +\S+ (pass|FAIL) .*max_num_seqs=(\d+) max_num_batched_tokens=(\d+) .*enable_chunked_prefill=(true|false)`)
		var off, passed int
		matches := trial.FindAllStringSubmatch(out, -1)
		if len(matches) == 0 {
			return fmt.Errorf("no completed trial in the output")
		}
		for _, m := range matches {
			seqs, _ := strconv.Atoi(m[3])
			batched, _ := strconv.Atoi(m[4])
			if m[2] == "pass" {
				passed++
			}
			if m[5] == "false" {
				off++
				if batched < 4096 {
					return fmt.Errorf("trial %s runs chunked prefill off with %d batched tokens: the page says such trials run with 4096", m[1], batched)
				}
			}
			if batched < seqs {
				return fmt.Errorf("trial %s runs %d batched tokens for %d sequences: the page says none runs fewer", m[1], batched, seqs)
			}
		}
		if off == 0 || passed == 0 {
			return fmt.Errorf("%d trials with chunked prefill off and %d meeting the SLO: the page's example needs both", off, passed)
		}
		return nil
	},
	"calibrate-loop": func(out string, _ map[string]string) error {
		got := labelled(out)
		fitted := map[string]float64{}
		for _, key := range []string{"compute_scale", "bandwidth_scale", "sequence_overhead_us"} {
			v, err := strconv.ParseFloat(got[key], 64)
			if err != nil {
				return fmt.Errorf("no fitted %s in the output (%q)", key, got[key])
			}
			fitted[key] = v
		}
		if d := math.Abs(fitted["bandwidth_scale"] - 0.9); d > 0.05 {
			return fmt.Errorf("bandwidth_scale fitted %v, hidden 0.9: the page says within 0.05", fitted["bandwidth_scale"])
		}
		// The page says the two trade: a faster prefill comes with
		// costlier sequences (both high here); each stays within 75% of
		// its hidden value.
		compute, perSeq := fitted["compute_scale"]/0.8-1, fitted["sequence_overhead_us"]/40-1
		if !(compute > 0 && perSeq > 0) || compute > 0.75 || perSeq > 0.75 {
			return fmt.Errorf("compute_scale fitted %v (hidden 0.8), sequence_overhead_us %v (hidden 40): the page says both come out high, each within 75%%",
				fitted["compute_scale"], fitted["sequence_overhead_us"])
		}
		errs := regexp.MustCompile(`(?m)^(holdout )?\S+ +\S+ / \S+ / ([-+][0-9.]+)% +\S+ / \S+ / ([-+][0-9.]+)%`).FindAllStringSubmatch(out, -1)
		var fits, holdouts int
		for _, m := range errs {
			limit := 2.5
			if m[1] != "" {
				limit = 6
				holdouts++
			} else {
				fits++
			}
			for _, e := range m[2:] {
				if v, _ := strconv.ParseFloat(e, 64); math.Abs(v) > limit {
					return fmt.Errorf("%q is off by %s%%: the page says within %v%%", m[0], e, limit)
				}
			}
		}
		if fits != 3 || holdouts != 1 {
			return fmt.Errorf("found %d fitted and %d held-out runs in the output, want 3 and 1", fits, holdouts)
		}
		return nil
	},
	"sim-whatif-gpus": func(out string, _ map[string]string) error {
		rows, err := termTable(out)
		if err != nil {
			return err
		}
		h100, a100 := rows["H100"], rows["A100-80GB"]
		if v, err := h100.num("Request throughput (req/s)"); err != nil || v < 9.5 {
			return fmt.Errorf("H100 serves %v req/s (%v): the page says it keeps up, over 9.5 req/s", v, err)
		}
		if v, err := a100.num("Request throughput (req/s)"); err != nil || v >= 9 {
			return fmt.Errorf("A100-80GB serves %v req/s (%v): the page says it falls behind, under 9 req/s", v, err)
		}
		if err := ratioAbove(a100, h100, "Median TPOT (ms)", 5); err != nil {
			return err
		}
		return ratioAbove(a100, h100, "P99 TTFT (ms)", 10)
	},
	"sim-preemption-loop": func(out string, _ map[string]string) error {
		tput := map[string]float64{}
		for _, m := range regexp.MustCompile(`(?m)^(\w+) +(\d+) +Throughput: ([0-9.]+) requests/s`).FindAllStringSubmatch(out, -1) {
			tput[m[1]+" "+m[2]], _ = strconv.ParseFloat(m[3], 64)
		}
		if len(tput) != 6 {
			return fmt.Errorf("found %d throughput lines, want 6", len(tput))
		}
		for _, seqs := range []string{"128", "256", "512"} {
			if tput["swap "+seqs] <= tput["recompute "+seqs] {
				return fmt.Errorf("at %s sequences swap gives %v req/s, recompute %v: the page says swap beats recompute", seqs, tput["swap "+seqs], tput["recompute "+seqs])
			}
		}
		for _, mode := range []string{"recompute", "swap"} {
			if tput[mode+" 512"] >= tput[mode+" 256"] {
				return fmt.Errorf("%s: 512 sequences give %v req/s, 256 give %v: the page says 512 preempt more than they gain", mode, tput[mode+" 512"], tput[mode+" 256"])
			}
		}
		return nil
	},
	"sim-preemption-sweep": func(out string, page map[string]string) error {
		var loop []string
		for _, line := range strings.Split(strings.TrimSpace(page["sim-preemption-loop"]), "\n") {
			if i := strings.Index(line, "Throughput:"); i >= 0 {
				loop = append(loop, line[i:])
			}
		}
		swept := strings.Split(strings.TrimSpace(out), "\n")
		slices.Sort(loop)
		slices.Sort(swept)
		if !slices.Equal(loop, swept) {
			return fmt.Errorf("the sweep's Throughput lines are not the loop's:\nloop:  %q\nsweep: %q", loop, swept)
		}
		return nil
	},
}

// labelled reads "Label:   value" lines (sim's and bench's result
// blocks) into a map; the value is the first field after the colon.
func labelled(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		label, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if f := strings.Fields(value); len(f) > 0 {
			m[strings.TrimSpace(label)] = f[0]
		}
	}
	return m
}

// sections is the labelled lines after a header line up to the next
// line starting with "== ".
func sections(out, header string) map[string]string {
	_, rest, ok := strings.Cut(out, header+"\n")
	if !ok {
		return map[string]string{}
	}
	if i := strings.Index(rest, "\n== "); i >= 0 {
		rest = rest[:i]
	}
	return labelled(rest)
}

// fig is a labelled figure as a number, NaN when absent (which fails
// every comparison).
func fig(m map[string]string, key string) float64 {
	v, err := strconv.ParseFloat(m[key], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// more requires a[key] > b[key].
func more(a, b map[string]string, key, aName, bName string) error {
	x, err1 := strconv.ParseFloat(a[key], 64)
	y, err2 := strconv.ParseFloat(b[key], 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%s: no figure for %s (%q) or %s (%q)", key, aName, a[key], bName, b[key])
	}
	if x <= y {
		return fmt.Errorf("%s: %s has %v, %s %v: the page says %s's is higher", key, aName, x, bName, y, aName)
	}
	return nil
}

// row is one row of a table, by column title.
type row map[string]string

func (r row) num(col string) (float64, error) {
	v, ok := r[col]
	if !ok {
		return 0, fmt.Errorf("no column %q", col)
	}
	return strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
}

// ratioAbove requires a[col] > k × b[col].
func ratioAbove(a, b row, col string, k float64) error {
	x, err := a.num(col)
	if err != nil {
		return err
	}
	y, err := b.num(col)
	if err != nil {
		return err
	}
	if x <= k*y {
		return fmt.Errorf("%s: %s %v is not above %v× %s's %v", col, a["Label"], x, k, b["Label"], y)
	}
	return nil
}

// ratioAtMost requires a[colA] <= k × b[colB].
func ratioAtMost(a, b row, colA, colB string, k float64) error {
	x, err := a.num(colA)
	if err != nil {
		return err
	}
	y, err := b.num(colB)
	if err != nil {
		return err
	}
	if !(x <= k*y) {
		return fmt.Errorf("%s %s %v is above %v× %s %s %v", a["Label"], colA, x, k, b["Label"], colB, y)
	}
	return nil
}

// table is the rows of a Markdown table.
type table []row

// mdTable reads the Markdown table compare --format md prints.
func mdTable(out string) (table, error) {
	var header []string
	var t table
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case header == nil:
			header = cells
		case strings.HasPrefix(cells[0], "---"):
		default:
			r := row{}
			for i, c := range cells {
				if i < len(header) {
					r[header[i]] = c
				}
			}
			t = append(t, r)
		}
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("no Markdown table in the output")
	}
	return t, nil
}

// find is the row of an arm (its label up to the colon a sweep point
// adds) whose columns hold the given key, value pairs; an empty row when
// there is none, whose figures then fail every check.
func (t table) find(arm string, keyvals ...string) row {
	for _, r := range t {
		label, _, _ := strings.Cut(r["Label"], ":")
		if label != arm {
			continue
		}
		match := true
		for i := 0; i+1 < len(keyvals); i += 2 {
			if r[keyvals[i]] != keyvals[i+1] {
				match = false
			}
		}
		if match {
			return r
		}
	}
	return row{"Label": arm + " (missing)"}
}

// termTable reads compare's terminal table: header lines, a line of
// dashes marking each column's span, then rows. Rows are keyed by their
// first column; each column's title joins its header words.
func termTable(out string) (map[string]row, error) {
	lines := strings.Split(out, "\n")
	dash := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "---") && strings.Trim(l, "- ") == "" {
			dash = i
			break
		}
	}
	if dash < 1 {
		return nil, fmt.Errorf("no terminal table (a line of dashes under its header) in the output")
	}
	type span struct{ from, to int }
	var spans []span
	for i := 0; i < len(lines[dash]); {
		if lines[dash][i] != '-' {
			i++
			continue
		}
		j := i
		for j < len(lines[dash]) && lines[dash][j] == '-' {
			j++
		}
		spans = append(spans, span{i, j})
		i = j
	}
	cut := func(l string, s span) string {
		if s.from >= len(l) {
			return ""
		}
		return strings.TrimSpace(l[s.from:min(s.to, len(l))])
	}
	titles := make([]string, len(spans))
	for i, s := range spans {
		var words []string
		for _, l := range lines[:dash] {
			if w := cut(l, s); w != "" {
				words = append(words, w)
			}
		}
		titles[i] = strings.Join(words, " ")
	}
	rows := map[string]row{}
	for _, l := range lines[dash+1:] {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "(") {
			continue
		}
		r := row{}
		for i, s := range spans {
			r[titles[i]] = cut(l, s)
		}
		rows[r[titles[0]]] = r
	}
	return rows, nil
}
