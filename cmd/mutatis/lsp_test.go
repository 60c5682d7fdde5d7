package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestLSPCommand: mutatis lsp speaks the protocol on stdin and stdout:
// initialize, shutdown and exit, exit code 0; the end of its input ends
// it too.
func TestLSPCommand(t *testing.T) {
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	for _, tc := range []struct {
		name, in string
	}{
		{"exit", frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`) +
			frame(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`) + frame(`{"jsonrpc":"2.0","method":"exit"}`)},
		{"end of input", frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"lsp"}, strings.NewReader(tc.in), &stdout, &stderr)
			if code != exitOK {
				t.Fatalf("exit code %d, stderr %s", code, stderr.String())
			}
			if out := stdout.String(); !strings.Contains(out, `"result":{"capabilities":{"textDocumentSync"`) || !strings.Contains(out, `"id":1}`) {
				t.Errorf("stdout: %s", stdout.String())
			}
		})
	}
}
