package workload

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/servebench/servebench/internal/option"
)

// sonnetBasePrompt is vLLM's sonnet instruction.
const sonnetBasePrompt = "Pick as many lines as you can from these poem lines:\n"

// sonnet is vLLM's (deprecated) SonnetDataset: the base prompt, the first
// lines of the poem as a prefix shared by every prompt, then lines drawn with
// replacement, with line counts derived from the average line length; prompts
// longer than InputLen tokens are drawn again.
//
// vLLM measures (and, on the completions endpoint, sends) the prompt wrapped
// in the model's chat template. servebench has no chat templates, so it sends
// and measures the raw text; prompts are therefore a few template tokens
// longer in lines than vLLM's for the same --sonnet-input-len.
func (b *builder) sonnet() ([]Request, error) {
	next, err := b.sonnetPrompts()
	if err != nil {
		return nil, err
	}
	reqs := make([]Request, 0, b.spec.NumPrompts)
	for range b.spec.NumPrompts {
		r, err := next()
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

// sonnetPrompts reads the poem and returns what makes sonnet's prompts one
// at a time, in order, drawing from b.rng.
func (b *builder) sonnetPrompts() (func() (Request, error), error) {
	o := b.spec.Sonnet
	path := b.spec.Path
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, line := range lines {
		n, _, err := b.countTokens(line)
		if err != nil {
			return nil, err
		}
		total += n
	}
	avg := float64(total) / float64(len(lines))
	if avg <= 0 {
		return nil, option.Errorf("dataset file %q: its lines have no tokens; pass a text file to {dataset_path}", path)
	}
	baseLen, _, err := b.countTokens(sonnetBasePrompt)
	if err != nil {
		return nil, err
	}
	if o.InputLen <= baseLen {
		return nil, option.Errorf("{sonnet_input_len} %d: must be greater than the base prompt's %d tokens", o.InputLen, baseLen)
	}
	// Python's round() rounds half to even.
	numInputLines := int(math.RoundToEven(float64(o.InputLen-baseLen) / avg))
	numPrefixLines := max(int(math.RoundToEven(float64(o.PrefixLen-baseLen)/avg)), 0)
	// vLLM splits the file at newlines and rounds line counts; with lines
	// longer than the room left after the base prompt it rounds to zero
	// lines and silently sends the base prompt alone (a one-line 2 MB file
	// gave 12-token prompts for --sonnet-input-len 550).
	if numInputLines == 0 {
		return nil, option.Errorf("dataset file %q: its %d line(s) average %.0f tokens, more than twice the %d tokens {sonnet_input_len} %d leaves after the %d-token base prompt, so every prompt would be the base prompt alone; "+
			"sonnet draws whole lines (split at newlines, as vLLM does): give a text with one short line per verse, raise {sonnet_input_len}, or use {dataset_name} random",
			path, len(lines), avg, o.InputLen-baseLen, o.InputLen, baseLen)
	}
	if numPrefixLines == 0 && o.PrefixLen > baseLen {
		return nil, option.Errorf("dataset file %q: its lines average %.0f tokens, more than twice the %d tokens {sonnet_prefix_len} %d leaves after the %d-token base prompt, so prompts would share no prefix lines; "+
			"give a text with shorter lines, raise {sonnet_prefix_len}, or set it to 0",
			path, avg, o.PrefixLen-baseLen, o.PrefixLen, baseLen)
	}
	prefix := sonnetBasePrompt + strings.Join(lines[:min(numPrefixLines, len(lines))], "")
	numDrawn := max(0, numInputLines-numPrefixLines)

	n := b.spec.NumPrompts
	// vLLM redraws forever; a bound turns an impossible length into an error.
	maxDraws := 1000 + 50*n
	made, draws := 0, 0
	var sb strings.Builder
	return func() (Request, error) {
		for ; ; draws++ {
			if draws == maxDraws {
				return Request{}, option.Errorf("dataset file %q: only %d of %d sonnet prompts fit {sonnet_input_len} %d in %d draws "+
					"(base prompt, %d prefix lines and %d drawn lines of ~%.1f tokens each); raise {sonnet_input_len} or lower {sonnet_prefix_len}",
					path, made, n, o.InputLen, draws, numPrefixLines, numDrawn, avg)
			}
			if err := b.canceled(); err != nil {
				return Request{}, err
			}
			sb.Reset()
			sb.WriteString(prefix)
			for range numDrawn {
				sb.WriteString(lines[b.rng.IntN(len(lines))])
			}
			prompt := sb.String()
			promptLen, estimated, err := b.countTokens(prompt)
			if err != nil {
				return Request{}, err
			}
			if promptLen <= o.InputLen {
				draws++
				made++
				b.report(made, n)
				return Request{Prompt: prompt, PromptLen: promptLen, PromptLenEstimated: estimated, MaxTokens: o.OutputLen}, nil
			}
		}
	}, nil
}

// readLines reads a text file as Python's readlines() does: every line keeps
// its "\n".
func readLines(path string) ([]string, error) {
	f, err := openDataset(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, &datasetError{fmt.Sprintf("dataset file %q: %v", path, err), err}
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("dataset file %q: empty; the sonnet dataset needs lines of text", path)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines, nil
}
