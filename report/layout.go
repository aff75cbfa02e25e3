package report

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// How runs differ decides how tables and charts show them. Every key in
// which the runs of one setup differ is shown, as a column, a colour or a
// chart of its own, and never averaged away: a point on a curve is one
// run, or the mean of the repeats (sweep --repeat) of one sweep point.

// settingKeys are result keys that say how a loose result file's run was
// set up rather than what it measured. num_prompts is left out: it is
// often scaled with the rate to keep runs equally long, and it is not a
// setting latency depends on.
var settingKeys = []string{"request_rate", "max_concurrency", "burstiness", "model_id"}

// loadKeys set the offered load; on an achieved-throughput axis the
// throughput stands for them.
var loadKeys = []string{"request_rate", "max_concurrency"}

// runKey is a key runs may differ in.
type runKey struct {
	name  string // as the user wrote it: the swept flag, or the result or metadata key
	canon string
}

// value is the key's text in r; "" when r lacks it.
func (k runKey) value(r LoadedResult) string {
	v, _ := r.Text(k.name)
	return v
}

// candidateKeys lists the keys runs may differ in: swept flags in axis
// order, then the setting keys, then --metadata keys (but its label).
func candidateKeys(results []LoadedResult) []runKey {
	var keys []runKey
	seen := map[string]bool{"label": true}
	add := func(name string) {
		c := canonicalKey(name)
		if c == "" || seen[c] {
			return
		}
		seen[c] = true
		keys = append(keys, runKey{name: strings.TrimLeft(name, "-"), canon: c})
	}
	for _, r := range results {
		for _, p := range r.Params {
			add(p.Flag)
		}
	}
	for _, k := range settingKeys {
		add(k)
	}
	var meta []string
	for _, r := range results {
		if m, ok := r.Fields["metadata"].(map[string]any); ok {
			for k := range m {
				meta = append(meta, k)
			}
		}
	}
	slices.Sort(meta)
	for _, k := range meta {
		add(k)
	}
	return keys
}

// differingKeys returns the candidate keys that take two or more values
// among the runs of one series (a key that only tells two sweeps apart is
// already told by their series), leaving out the canonical names in
// exclude. A run that lacks a key (a file from a tool that does not write
// it) differs from no one in it.
func differingKeys(results []LoadedResult, exclude ...string) []runKey {
	var out []runKey
	for _, k := range candidateKeys(results) {
		if slices.Contains(exclude, k.canon) {
			continue
		}
		first := map[string]string{}
		for _, r := range results {
			v := k.value(r)
			if v == "" {
				continue
			}
			if f, ok := first[r.Series]; !ok {
				first[r.Series] = v
			} else if f != v {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// compareValues orders key values: numbers numerically (4 before 10, inf
// last among them), then text, then missing values.
func compareValues(a, b string) int {
	if (a == "") != (b == "") {
		if a == "" {
			return 1
		}
		return -1
	}
	x, okA := anyToFloat(a)
	y, okB := anyToFloat(b)
	switch {
	case okA && okB:
		return cmp.Compare(x, y)
	case okA:
		return -1
	case okB:
		return 1
	}
	return strings.Compare(a, b)
}

func compareValueLists(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if c := compareValues(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func keyValues(keys []runKey, r LoadedResult) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.value(r)
	}
	return out
}

// keyText names values as "key=value, key=value".
func keyText(keys []runKey, values []string) string {
	parts := make([]string, 0, len(keys))
	for i, k := range keys {
		v := values[i]
		if v == "" {
			v = "(none)"
		}
		parts = append(parts, k.name+"="+v)
	}
	return strings.Join(parts, ", ")
}

// seriesRanks numbers series in order of first appearance; loose files
// (series "") take the place of the first of them.
func seriesRanks(results []LoadedResult) map[string]int {
	ranks := map[string]int{}
	for _, r := range results {
		if _, ok := ranks[r.Series]; !ok {
			ranks[r.Series] = len(ranks)
		}
	}
	return ranks
}

// isSweptFlag tells a key swept by some run's sweep from a key its result
// records.
func isSweptFlag(results []LoadedResult, k runKey) bool {
	for _, r := range results {
		for _, p := range r.Params {
			if canonicalKey(p.Flag) == k.canon {
				return true
			}
		}
	}
	return false
}

// chartLayout maps runs onto charts: x is the load axis; every other key
// the runs of one setup differ in makes a facet (a chart of its own per
// value) or, with a single setup, a colour. Runs are placed once so a run
// keeps its colour in every chart.
type chartLayout struct {
	xKey, xLabel string
	// loadKey is what sets a run's load: the x key, or under an achieved
	// throughput axis the request rate or concurrency when it varies. Two
	// runs of one setup at one load are one point only when they are
	// repeats of one sweep point.
	loadKey    *runKey
	colourKeys []runKey
	facetKeys  []runKey
	manySeries bool
	facets     []facet
	identities []identity
	places     []runPlace // parallel to the results
	// repeats counts the sweep points whose repeated runs are averaged
	// in the load curves; sharedLoad names runs drawn as lines of their
	// own because their files tell them apart from nothing but their label.
	repeats    int
	sharedLoad []string
}

// facet is one combination of facet-key values.
type facet struct {
	values []string
	label  string // "random-input-len=256"; "" when there is no facet key
}

// identity is one colour: a setup (series and colour-key values), and a
// lane when runs of that setup share a load without being repeats.
type identity struct {
	label string
	color string
}

type runPlace struct {
	facet, identity int
	load            string // the load key's value; "" without one
	x               float64
	xOK             bool
	// point groups a sweep point's repeats: runs with the same point in
	// the same facet and identity are averaged into one load-curve point.
	point string
}

// newChartLayout places every run.
func newChartLayout(results []LoadedResult, groupBy string) *chartLayout {
	l := &chartLayout{}
	l.chooseKeys(results, groupBy)
	l.places = make([]runPlace, len(results))
	runFacet := l.placeFacets(results)
	setups, runIdentity := l.placeRuns(results, runFacet)
	l.nameIdentities(results, groupIdentities(results, setups, runIdentity))
	return l
}

// chooseKeys picks the x axis, the load key and which differing keys make
// colours and which make facets.
func (l *chartLayout) chooseKeys(results []LoadedResult, groupBy string) {
	l.xKey, l.xLabel = loadAxis(results, groupBy)
	exclude := []string{canonicalKey(l.xKey)}
	if l.xKey == "request_throughput" {
		exclude = append(exclude, loadKeys...)
		for _, k := range differingKeys(results) {
			if slices.Contains(loadKeys, k.canon) {
				l.loadKey = &k
				break
			}
		}
	} else {
		l.loadKey = &runKey{name: l.xKey, canon: canonicalKey(l.xKey)}
	}
	split := differingKeys(results, exclude...)
	l.manySeries = len(seriesRanks(results)) > 1
	switch {
	case l.manySeries:
		l.facetKeys = split
	case len(split) > 0:
		l.colourKeys, l.facetKeys = split[:1], split[1:]
	}
}

// placeFacets lists the facets in value order and puts each run in its
// own. It returns each run's facet-key values joined, which tell the
// runs of one facet apart from the others when lanes are assigned.
func (l *chartLayout) placeFacets(results []LoadedResult) []string {
	facetIndex := map[string]int{}
	runFacet := make([]string, len(results))
	for i, r := range results {
		vals := keyValues(l.facetKeys, r)
		key := strings.Join(vals, "\x00")
		runFacet[i] = key
		if _, ok := facetIndex[key]; !ok {
			facetIndex[key] = len(l.facets)
			l.facets = append(l.facets, facet{values: vals, label: keyText(l.facetKeys, vals)})
		}
	}
	slices.SortStableFunc(l.facets, func(a, b facet) int { return compareValueLists(a.values, b.values) })
	for i, f := range l.facets {
		facetIndex[strings.Join(f.values, "\x00")] = i
	}
	for i := range results {
		l.places[i].facet = facetIndex[runFacet[i]]
	}
	return runFacet
}

// placeRuns finds each run's setup, then its lane within the setup for
// runs that share a load without being repeats of one sweep point, and
// counts the repeated sweep points and the runs that share a load.
func (l *chartLayout) placeRuns(results []LoadedResult, runFacet []string) (map[string]setupKey, []identityKey) {
	setups := map[string]setupKey{}
	runIdentity := make([]identityKey, len(results))
	lanesAt := map[string][]string{} // facet+setup+load → point keys, in order
	repeatCount := map[string]int{}
	for i, r := range results {
		vals := keyValues(l.colourKeys, r)
		sk := r.Series + "\x00" + strings.Join(vals, "\x00")
		setups[sk] = setupKey{r.Series, vals}
		p := &l.places[i]
		if l.loadKey != nil {
			p.load = l.loadKey.value(r)
		}
		p.x, p.xOK = r.Number(l.xKey)
		p.xOK = p.xOK && isFiniteNumber(p.x)
		// Repeats of one sweep point share its series and swept values;
		// any other run is a point of its own.
		p.point = "run\x00" + strconv.Itoa(i)
		if r.Repeat > 0 && r.Series != "" {
			p.point = "sweep\x00" + r.Series + "\x00" + paramText(r.Params)
		}
		repeatCount[p.point]++
		at := runFacet[i] + "\x01" + sk + "\x01" + p.load
		lane := slices.Index(lanesAt[at], p.point)
		if lane < 0 {
			lane = len(lanesAt[at])
			lanesAt[at] = append(lanesAt[at], p.point)
		}
		runIdentity[i] = identityKey{sk, lane}
	}
	for _, n := range repeatCount {
		if n > 1 {
			l.repeats++
		}
	}
	// A lane past the first holds runs that share a setup and a load with
	// another run; name such runs so the reader can find them.
	for i, r := range results {
		if runIdentity[i].lane > 0 {
			l.sharedLoad = append(l.sharedLoad, r.Label)
		}
	}
	return setups, runIdentity
}

// identityGroups are the runs of each identity (a setup's lane), with the
// identities in colour order: by series, then colour-key values, then lane.
type identityGroups struct {
	setups   map[string]setupKey
	keys     []identityKey
	members  map[identityKey][]int
	hasLanes map[string]bool
}

func groupIdentities(results []LoadedResult, setups map[string]setupKey, runIdentity []identityKey) identityGroups {
	g := identityGroups{setups: setups, members: map[identityKey][]int{}, hasLanes: map[string]bool{}}
	for i := range results {
		k := runIdentity[i]
		if _, ok := g.members[k]; !ok {
			g.keys = append(g.keys, k)
		}
		g.members[k] = append(g.members[k], i)
		g.hasLanes[k.setup] = g.hasLanes[k.setup] || k.lane > 0
	}
	ranks := seriesRanks(results)
	slices.SortStableFunc(g.keys, func(a, b identityKey) int {
		sa, sb := setups[a.setup], setups[b.setup]
		if c := cmp.Compare(ranks[sa.series], ranks[sb.series]); c != 0 {
			return c
		}
		if c := compareValueLists(sa.values, sb.values); c != 0 {
			return c
		}
		return cmp.Compare(a.lane, b.lane)
	})
	return g
}

// nameIdentities gives each identity its colour and label and places its
// runs in it.
func (l *chartLayout) nameIdentities(results []LoadedResult, g identityGroups) {
	for n, k := range g.keys {
		s := g.setups[k.setup]
		label := strings.Join(parts(l, s), ", ")
		if runs := g.members[k]; s.series == "" && len(l.colourKeys) == 0 && samePoint(l.places, runs) {
			// A lone loose file is better named by its label than "files".
			label = results[runs[0]].Label
		}
		if g.hasLanes[k.setup] {
			// A lane of one run (or of one point's repeats) is named by
			// that run, the only name its files give it; a longer lane by
			// what its runs' labels share ("server-a" for "server-a-4" and
			// "server-a-8"), else by its number.
			runs := g.members[k]
			switch prefix := labelPrefix(results, runs); {
			case samePoint(l.places, runs):
				label = results[runs[0]].Label
			case prefix != "":
				label = joinNonEmpty(", ", label, prefix)
			default:
				label = cmp.Or(label, seriesLabel(s.series)) + " #" + strconv.Itoa(k.lane+1)
			}
		}
		l.identities = append(l.identities, identity{label: label, color: paletteColor(n)})
		for _, i := range g.members[k] {
			l.places[i].identity = n
		}
	}
	// Lanes named alike by their labels' prefixes are numbered instead.
	named := map[string]int{}
	for _, id := range l.identities {
		named[id.label]++
	}
	for n, k := range g.keys {
		if id := &l.identities[n]; named[id.label] > 1 && g.hasLanes[k.setup] && !samePoint(l.places, g.members[k]) {
			id.label = cmp.Or(strings.Join(parts(l, g.setups[k.setup]), ", "), seriesLabel(g.setups[k.setup].series)) + " #" + strconv.Itoa(k.lane+1)
		}
	}
}

// labelPrefix is what the labels of runs share at their start, cut back
// to a separator, or "" when that leaves under three characters.
func labelPrefix(results []LoadedResult, runs []int) string {
	prefix := results[runs[0]].Label
	for _, i := range runs[1:] {
		label := results[i].Label
		n := 0
		for n < len(prefix) && n < len(label) && prefix[n] == label[n] {
			n++
		}
		prefix = prefix[:n]
	}
	if cut := strings.LastIndexAny(prefix, " -_:/="); cut >= 0 && cut < len(prefix)-1 && len(runs) > 1 {
		prefix = prefix[:cut]
	}
	prefix = strings.TrimRight(prefix, " -_:/=")
	if len(prefix) < 3 {
		return ""
	}
	return prefix
}

// parts names a setup by its series (when there are several) and colour
// keys.
func parts(l *chartLayout, s setupKey) []string {
	var out []string
	if l.manySeries {
		out = append(out, seriesLabel(s.series))
	}
	if len(l.colourKeys) > 0 {
		out = append(out, keyText(l.colourKeys, s.values))
	}
	return out
}

// setupKey is a series and its colour-key values.
type setupKey struct {
	series string
	values []string
}

// identityKey is a setup and a lane within it.
type identityKey struct {
	setup string
	lane  int
}

func samePoint(places []runPlace, runs []int) bool {
	for _, i := range runs[1:] {
		if places[i].point != places[runs[0]].point {
			return false
		}
	}
	return true
}

func paramText(params []Param) string {
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = canonicalKey(p.Flag) + "=" + p.Value
	}
	return strings.Join(parts, "\x00")
}

// lineDashes tell lines of one colour apart: statistics on load curves,
// loads on distributions. Each is distinct at a glance on a 2 px line.
var lineDashes = [][]int{nil, {8, 4}, {2, 3}, {12, 3, 2, 3}, {4, 4}, {1, 5}, {16, 4, 2, 4, 2, 4}, {6, 2, 1, 2}}

// paletteColor is Tableau 10, then further hues spread by the golden
// angle, so a report with more setups than ten colours still gives each
// its own.
func paletteColor(i int) string {
	if i < len(palette) {
		return palette[i]
	}
	h := math.Mod(float64(i-len(palette))*137.508+15, 360)
	return hslHex(h, 0.55, 0.45)
}

func hslHex(h, s, l float64) string {
	c := (1 - math.Abs(2*l-1)) * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := l - c/2
	var r, g, b float64
	switch {
	case h < 60:
		r, g = c, x
	case h < 120:
		r, g = x, c
	case h < 180:
		g, b = c, x
	case h < 240:
		g, b = x, c
	case h < 300:
		r, b = x, c
	default:
		r, b = c, x
	}
	byte := func(v float64) int { return int(math.Round((v + m) * 255)) }
	return "#" + hex2(byte(r)) + hex2(byte(g)) + hex2(byte(b))
}

func hex2(v int) string {
	s := strconv.FormatInt(int64(v), 16)
	if len(s) < 2 {
		s = "0" + s
	}
	return s
}
