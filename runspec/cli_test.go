package runspec

import (
	"strings"
	"testing"
)

func TestExpandMultiValueFlags(t *testing.T) {
	got := ExpandMultiValueFlags([]string{"bench", "--goodput", "ttft:1", "tpot:2", "--metadata", "a=1", "b=2", "--num-prompts", "3", "--header", "x=1"})
	want := "bench --goodput ttft:1 --goodput tpot:2 --metadata a=1 --metadata b=2 --num-prompts 3 --header x=1"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %q\nwant %q", strings.Join(got, " "), want)
	}
}

func TestParseHeadersBothFormsNeverEchoTheValue(t *testing.T) {
	const secret = "sk-planted-7c1f"
	tests := []struct {
		item      string
		wantName  string
		wantValue string
		wantErr   bool
	}{
		{item: "Authorization: Bearer " + secret, wantName: "Authorization", wantValue: "Bearer " + secret},
		{item: "Authorization=Bearer " + secret, wantName: "Authorization", wantValue: "Bearer " + secret},
		{item: "X-Trace: a=b", wantName: "X-Trace", wantValue: "a=b"},
		{item: "Bearer" + secret, wantErr: true},
	}
	for _, tt := range tests {
		h, err := ParseHeader(tt.item)
		if tt.wantErr {
			if err == nil {
				t.Fatalf("ParseHeader(%q): want an error", tt.item)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error repeats the secret: %v", err)
			}
			continue
		}
		if err != nil || h.Name != tt.wantName || h.Value != tt.wantValue {
			t.Fatalf("ParseHeader(%q) = %+v, %v; want %s / %s", tt.item, h, err, tt.wantName, tt.wantValue)
		}
	}
}
