package serve

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Conformance: the official OpenAI Go SDK drives the server, streaming and
// not, on both endpoints, and every response decodes with the counts it
// claims (the text re-tokenizes to usage.completion_tokens).

func sdkClient(t *testing.T, r *Running) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(r.URL()+"/v1/"),
		option.WithAPIKey("unused"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(testClient(t)),
	)
}

func countTokens(t *testing.T, r *Running, text string) int {
	t.Helper()
	ids, err := r.Tokenizer().Encode(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

func TestSDKCompletions(t *testing.T) {
	r := startServer(t, testConfig(t))
	client := sdkClient(t, r)
	ctx := context.Background()

	resp, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model:     "test-model",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("The quick brown fox")},
		MaxTokens: openai.Int(12),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.ID, "cmpl-") || resp.Model != "test-model" || len(resp.Choices) != 1 {
		t.Fatalf("response %+v", resp)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "length" || resp.Usage.CompletionTokens != 12 || resp.Usage.PromptTokens != 4 || resp.Usage.TotalTokens != 16 {
		t.Errorf("finish %q usage %+v", ch.FinishReason, resp.Usage)
	}
	if n := countTokens(t, r, ch.Text); n != 12 {
		t.Errorf("text %q is %d tokens, usage says 12", ch.Text, n)
	}

	stream := client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model:         "test-model",
		Prompt:        openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{791, 4062, 14198, 39935}},
		MaxTokens:     openai.Int(20),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var text strings.Builder
	var chunks, usageChunks int
	var finish string
	var usage openai.CompletionUsage
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) == 0 {
			usageChunks++
			usage = c.Usage
			continue
		}
		chunks++
		text.WriteString(c.Choices[0].Text)
		if c.Choices[0].FinishReason != "" {
			finish = string(c.Choices[0].FinishReason)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if err := stream.Close(); err != nil {
		t.Fatal(err)
	}
	if usageChunks != 1 || usage.CompletionTokens != 20 || usage.PromptTokens != 4 || finish != "length" || chunks == 0 {
		t.Errorf("chunks %d usage chunks %d usage %+v finish %q", chunks, usageChunks, usage, finish)
	}
	// The token-ID prompt is the same 4 tokens as the text prompt above,
	// so the (prompt-seeded) output starts the same way.
	if n := countTokens(t, r, text.String()); n != 20 || !strings.HasPrefix(text.String(), ch.Text) {
		t.Errorf("streamed %q (%d tokens); the non-streamed text was %q", text.String(), n, ch.Text)
	}
}

func TestSDKChat(t *testing.T) {
	r := startServer(t, testConfig(t))
	client := sdkClient(t, r)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model: "test-model",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are terse."),
			openai.UserMessage("Say something."),
		},
		MaxCompletionTokens: openai.Int(9),
	}
	resp, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Object != "chat.completion" || len(resp.Choices) != 1 {
		t.Fatalf("response %+v", resp)
	}
	msg := resp.Choices[0].Message
	if msg.Role != "assistant" || resp.Choices[0].FinishReason != "length" || resp.Usage.CompletionTokens != 9 {
		t.Errorf("role %q finish %q usage %+v", msg.Role, resp.Choices[0].FinishReason, resp.Usage)
	}
	if n := countTokens(t, r, msg.Content); n != 9 {
		t.Errorf("content %q is %d tokens", msg.Content, n)
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("accumulator rejected chunk %s", stream.Current().RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	_ = stream.Close()
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != msg.Content || acc.Usage.CompletionTokens != 9 ||
		acc.Choices[0].FinishReason != "length" || acc.Choices[0].Message.Role != "assistant" {
		t.Errorf("streamed %+v usage %+v; non-streamed content %q", acc.Choices, acc.Usage, msg.Content)
	}
}

func TestSDKErrors(t *testing.T) {
	cfg := testConfig(t)
	cfg.Engine.MaxModelLen = 32
	r := startServer(t, cfg)
	client := sdkClient(t, r)
	ctx := context.Background()
	tests := []struct {
		name    string
		params  openai.CompletionNewParams
		status  int
		typ     string
		message string
	}{
		{"unknown model", openai.CompletionNewParams{Model: "gpt-nope", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")}},
			404, "NotFoundError", "The model `gpt-nope` does not exist."},
		{"context length", openai.CompletionNewParams{Model: "test-model", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")}, MaxTokens: openai.Int(40)},
			400, "BadRequestError", "This model's maximum context length is 32 tokens. However, you requested 41 tokens (1 in the messages, 40 in the completion). Please reduce the length of the messages or completion."},
		{"n", openai.CompletionNewParams{Model: "test-model", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")}, N: openai.Int(3)},
			400, "BadRequestError", "n=3 is not supported: servebench serve generates one sequence per request (n=1)."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.Completions.New(ctx, tc.params)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v is not an *openai.Error", err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Type != tc.typ || apiErr.Message != tc.message {
				t.Errorf("got %d %q %q", apiErr.StatusCode, apiErr.Type, apiErr.Message)
			}
		})
	}
	page, err := client.Models.List(ctx)
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "test-model" {
		t.Errorf("models %+v, %v", page, err)
	}
}

// TestOutputLengthControls: the output-length distribution applies without
// ignore_eos, ignore_eos forces max_tokens, min_tokens raises the length,
// and a short answer finishes with "stop".
func TestOutputLengthControls(t *testing.T) {
	cfg := testConfig(t)
	cfg.OutputLen = OutputLenDist{Kind: OutputLenFixed, A: 5}
	r := startServer(t, cfg)
	client := sdkClient(t, r)
	ctx := context.Background()
	base := openai.CompletionNewParams{Model: "test-model", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hello")}, MaxTokens: openai.Int(30)}
	tests := []struct {
		name   string
		opts   []option.RequestOption
		tokens int64
		finish string
	}{
		{"distribution", nil, 5, "stop"},
		{"ignore_eos", []option.RequestOption{option.WithJSONSet("ignore_eos", true)}, 30, "length"},
		{"min_tokens", []option.RequestOption{option.WithJSONSet("min_tokens", 8)}, 8, "stop"},
		{"stop is ignored", []option.RequestOption{option.WithJSONSet("stop", []string{" the", "\n"})}, 5, "stop"},
	}
	for _, tc := range tests {
		resp, err := client.Completions.New(ctx, base, tc.opts...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if resp.Usage.CompletionTokens != tc.tokens || string(resp.Choices[0].FinishReason) != tc.finish {
			t.Errorf("%s: %d tokens, finish %q; want %d, %q", tc.name, resp.Usage.CompletionTokens, resp.Choices[0].FinishReason, tc.tokens, tc.finish)
		}
		if n := countTokens(t, r, resp.Choices[0].Text); int64(n) != tc.tokens {
			t.Errorf("%s: text is %d tokens", tc.name, n)
		}
	}
	// A request seed picks the text; without one the prompt does.
	texts := map[string]bool{}
	for _, seed := range []int64{1, 1, 2} {
		resp, err := client.Completions.New(ctx, openai.CompletionNewParams{Model: "test-model", MaxTokens: openai.Int(8),
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hello")}, Seed: openai.Int(seed)}, option.WithJSONSet("ignore_eos", true))
		if err != nil {
			t.Fatal(err)
		}
		texts[resp.Choices[0].Text] = true
	}
	if len(texts) != 2 {
		t.Errorf("seeds 1, 1, 2 gave %d distinct texts, want 2", len(texts))
	}
}
