package main

import (
	"strings"
	"testing"
)

func TestPDFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy", "--port", "0", "--backend", "http://127.0.0.1:1", "--prefill", "http://127.0.0.1:2", "--decode", "http://127.0.0.1:3"}, "--backend fronts a co-located fleet"},
		{[]string{"proxy", "--port", "0", "--prefill", "http://127.0.0.1:2"}, "--prefill and --decode"},
		{[]string{"proxy", "--port", "0", "--prefill", "http://127.0.0.1:2", "--decode", "http://127.0.0.1:3", "--handoff", "psychic"}, "--handoff"},
		{[]string{"proxy", "--port", "0", "--prefill", "ftp://x", "--decode", "http://127.0.0.1:3"}, "--prefill/--decode"},
		{[]string{"serve", "--port", "0", "--kv-role", "sideways"}, "--kv-role"},
		{[]string{"serve", "--port", "0", "--kv-peer", "127.0.0.1:14579"}, "--kv-peer needs --kv-role"},
		{[]string{"serve", "--port", "0", "--kv-role", "producer", "--kv-peer", "nowhere"}, "--kv-peer"},
		{[]string{"serve", "--port", "0", "--kv-role", "producer", "--kv-link", "pigeon"}, "--kv-link"},
		{[]string{"serve", "--port", "0", "--kv-role", "consumer", "--kv-port", "70000"}, "--kv-port"},
	} {
		_, _, err := runCLI(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line naming %s", tt.args, err, tt.want)
		}
	}
}
