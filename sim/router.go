package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// RouterPolicy is how a topology's router picks an engine instance.
type RouterPolicy string

const (
	// RouteRoundRobin cycles through the instances in order.
	RouteRoundRobin RouterPolicy = "rr"
	// RouteLeastLoaded picks the instance with the fewest requests in
	// flight (lowest index on a tie).
	RouteLeastLoaded RouterPolicy = "least-loaded"
	// RoutePrefixAware picks the instance whose recently routed prompts
	// share the longest block-aligned prefix with this one, falling back to
	// least-loaded on no match or when the fleet is imbalanced (see
	// prefixBalanceAbs).
	RoutePrefixAware RouterPolicy = "prefix-aware"
	// RouteRandom picks uniformly with the run's seed.
	RouteRandom RouterPolicy = "random"
)

// RouterPolicies lists the policies' names.
func RouterPolicies() []string {
	return []string{string(RouteRoundRobin), string(RouteLeastLoaded), string(RoutePrefixAware), string(RouteRandom)}
}

// ParseRouterPolicy checks a policy name.
func ParseRouterPolicy(s string) (RouterPolicy, error) {
	p := RouterPolicy(strings.ToLower(strings.TrimSpace(s)))
	switch p {
	case RouteRoundRobin, RouteLeastLoaded, RoutePrefixAware, RouteRandom:
		return p, nil
	case "round-robin", "roundrobin":
		return RouteRoundRobin, nil
	}
	return "", fmt.Errorf("unknown router policy %q; use one of %s", s, strings.Join(RouterPolicies(), ", "))
}

// prefixBalanceAbs and prefixBalanceRel are when prefix affinity yields to
// the least-loaded instance: the busiest instance holds more than
// prefixBalanceAbs requests above the idlest and more than prefixBalanceRel
// times its load. This is the guard SGLang's cache-aware router applies
// (balance_abs_threshold 32, balance_rel_threshold 1.0001 as recalled from
// its defaults, unverified); without it one hot prefix pins a whole fleet's
// load on one replica.
const (
	prefixBalanceAbs = 32
	prefixBalanceRel = 1.0001
)

// router picks instances of one pool.
type router struct {
	policy RouterPolicy
	rng    *rand.Rand
	next   int
	// index[i] remembers block hashes of prompts routed to instance i.
	index []*prefixIndex
}

func newRouter(policy RouterPolicy, instances []*instance, seed uint64) *router {
	r := &router{policy: policy, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	if policy == RoutePrefixAware {
		r.index = make([]*prefixIndex, len(instances))
		for i, in := range instances {
			r.index[i] = newPrefixIndex(in.eng.Config().NumGPUBlocks)
		}
	}
	return r
}

// pick returns the index of the instance for a prompt; ids may be nil
// (then prefix-aware routing is least-loaded).
func (r *router) pick(instances []*instance, ids []int32) int {
	if len(instances) == 1 {
		r.remember(0, instances, ids)
		return 0
	}
	var choice int
	switch r.policy {
	case RouteRoundRobin:
		choice = r.next % len(instances)
		r.next++
	case RouteRandom:
		choice = r.rng.IntN(len(instances))
	case RouteLeastLoaded:
		choice = leastLoaded(instances)
	case RoutePrefixAware:
		choice = r.prefixChoice(instances, ids)
	default:
		choice = leastLoaded(instances)
	}
	r.remember(choice, instances, ids)
	return choice
}

func (r *router) remember(choice int, instances []*instance, ids []int32) {
	if r.index == nil || ids == nil {
		return
	}
	r.index[choice].add(blockHashes(ids, instances[choice].eng.Config().BlockSize))
}

func leastLoaded(instances []*instance) int {
	best := 0
	for i, in := range instances {
		if in.load < instances[best].load {
			best = i
		}
	}
	return best
}

func (r *router) prefixChoice(instances []*instance, ids []int32) int {
	least := leastLoaded(instances)
	if ids == nil {
		return least
	}
	most := 0
	for i, in := range instances {
		if in.load > instances[most].load {
			most = i
		}
	}
	minLoad, maxLoad := instances[least].load, instances[most].load
	if maxLoad-minLoad > prefixBalanceAbs && float64(maxLoad) > prefixBalanceRel*float64(minLoad) {
		return least
	}
	best, bestMatch := least, 0
	for i, in := range instances {
		m := r.index[i].match(blockHashes(ids, in.eng.Config().BlockSize))
		if m > bestMatch || (m == bestMatch && m > 0 && in.load < instances[best].load) {
			best, bestMatch = i, m
		}
	}
	return best
}

// blockHashes chains a hash over each full block of ids, so equal hashes
// mean equal prefixes up to that block (as vLLM's block hashes do).
func blockHashes(ids []int32, blockSize int) []uint64 {
	if blockSize <= 0 {
		return nil
	}
	out := make([]uint64, 0, len(ids)/blockSize)
	h := uint64(fnvOffset)
	for end := blockSize; end <= len(ids); end += blockSize {
		for _, id := range ids[end-blockSize : end] {
			h ^= uint64(uint32(id))
			h *= fnvPrime
		}
		out = append(out, h)
	}
	return out
}

// prefixIndex is a bounded memory of block hashes an instance was sent,
// a router-side approximation of its prefix cache (the router cannot see
// evictions, so it forgets the oldest first, capped at the instance's KV
// blocks).
type prefixIndex struct {
	count map[uint64]int
	ring  []uint64
	pos   int
	full  bool
}

func newPrefixIndex(capacity int) *prefixIndex {
	return &prefixIndex{count: make(map[uint64]int), ring: make([]uint64, max(capacity, 1))}
}

func (p *prefixIndex) add(hashes []uint64) {
	for _, h := range hashes {
		if p.full {
			old := p.ring[p.pos]
			if p.count[old]--; p.count[old] <= 0 {
				delete(p.count, old)
			}
		}
		p.ring[p.pos] = h
		p.count[h]++
		p.pos++
		if p.pos == len(p.ring) {
			p.pos, p.full = 0, true
		}
	}
}

// match is how many leading blocks of hashes the index holds.
func (p *prefixIndex) match(hashes []uint64) int {
	for i, h := range hashes {
		if p.count[h] == 0 {
			return i
		}
	}
	return len(hashes)
}
