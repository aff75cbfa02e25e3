package vllm

import (
	"regexp"
	"testing"
	"time"
)

// TestTemplateModelKey: the ways a user names a model meet on the
// repository name.
func TestTemplateModelKey(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"Qwen/Qwen3-14B", "qwen3-14b"},
		{"qwen3-14b", "qwen3-14b"},
		{" Qwen/Qwen3-14B/ ", "qwen3-14b"},
		{"validate/corpus/models/Qwen--Qwen3-235B-A22B-Instruct-2507/config.json", "qwen3-235b-a22b-instruct-2507"},
		{"/models/Qwen--Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b-instruct-2507"},
		{"/root/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-R1-0528/snapshots/4236a6a/config.json", "deepseek-r1-0528"},
		{"/root/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-R1-0528/snapshots/4236a6a", "deepseek-r1-0528"},
		{"", ""},
	} {
		if got := templateModelKey(c.id); got != c.want {
			t.Errorf("templateModelKey(%q) = %q, want %q", c.id, got, c.want)
		}
	}
}

// TestTemplateParseFor: the reference template costs the fitted time; the
// others take their measured share of it, in the order measured (Qwen3's
// 2507 Instruct template, shorter, parses in about half Qwen3's time); a
// model whose template was not measured costs the reference's.
func TestTemplateParseFor(t *testing.T) {
	parse := func(id string) time.Duration {
		d, _ := templateParseFor(id)
		return d
	}
	ref, name := templateParseFor("deepseek-ai/DeepSeek-R1-0528")
	if ref != chatTemplateParseFitted || name != templateParseReference {
		t.Fatalf("reference template: %v (%q), want the fitted %v (%q)", ref, name, chatTemplateParseFitted, templateParseReference)
	}
	for _, id := range []string{"", "meta-llama/Llama-3.1-8B-Instruct", "no-such-model"} {
		if got, name := templateParseFor(id); got != chatTemplateParseFitted || name != "" {
			t.Errorf("%q (not measured): %v (%q), want the reference's %v and no template", id, got, name, chatTemplateParseFitted)
		}
	}
	qwen3 := parse("Qwen/Qwen3-14B")
	instruct := parse("Qwen/Qwen3-235B-A22B-Instruct-2507")
	if !(instruct < qwen3 && qwen3 < ref) {
		t.Errorf("Qwen3-2507 Instruct %v, Qwen3 %v, DeepSeek-R1-0528 %v: want them in that increasing order", instruct, qwen3, ref)
	}
	if r := float64(instruct) / float64(qwen3); r < 0.4 || r > 0.7 {
		t.Errorf("Qwen3-2507 Instruct / Qwen3 template = %.2f; the measured templates put it near 0.55", r)
	}
	for _, id := range []string{"Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "validate/corpus/models/Qwen--Qwen3-14B/config.json"} {
		if got := parse(id); got != qwen3 {
			t.Errorf("%s: %v, want Qwen3's template's %v", id, got, qwen3)
		}
	}
}

// TestMeasuredTemplateTable: the generated table is complete, and no model
// is claimed by two templates.
func TestMeasuredTemplateTable(t *testing.T) {
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	owner := map[string]string{}
	var reference bool
	for _, tp := range measuredTemplateParse {
		if tp.Name == templateParseReference {
			reference = len(tp.Models) > 0
		}
		if !hex64.MatchString(tp.SHA256) || tp.Chars <= 0 || tp.LexerTokens <= 0 || tp.Parse <= 0 || tp.Parse > time.Second || tp.Calls < 100 {
			t.Errorf("template %q: incomplete or implausible row %+v", tp.Name, tp)
		}
		for _, m := range tp.Models {
			k := templateModelKey(m)
			if prev, dup := owner[k]; dup {
				t.Errorf("model %s is in both %q and %q", m, prev, tp.Name)
			}
			owner[k] = tp.Name
		}
	}
	if !reference {
		t.Errorf("no %q template with models in the table", templateParseReference)
	}
}

// TestChatCostsTemplateParseRelease: 0.11.0 alone parses the template on
// every request (PR #25794 in, PR #26227's cache not yet); 0.11.1 and
// 0.11.2 keep the 0.11 ingest; 0.12 neither.
func TestChatCostsTemplateParseRelease(t *testing.T) {
	const model = "Qwen/Qwen3-235B-A22B-Instruct-2507"
	instructParse, _ := templateParseFor(model)
	for _, c := range []struct {
		release Release
		want    chatCost
	}{
		{Release{0, 10, 2}, chatCost{prepare: chatPrepareBase}},
		{Release{0, 11, 0}, chatCost{prepare: chatPrepareBase + instructParse, ingest: chatIngest011, templateParse: instructParse, template: "qwen3-instruct-2507"}},
		{Release{0, 11, 1}, chatCost{prepare: chatPrepareBase, ingest: chatIngest011}},
		{Release{0, 11, 2}, chatCost{prepare: chatPrepareBase, ingest: chatIngest011}},
		{Release{0, 12, 0}, chatCost{prepare: chatPrepareBase}},
	} {
		if got := chatCosts(c.release, model); got != c.want {
			t.Errorf("%v: %+v, want %+v", c.release, got, c.want)
		}
	}
}
