package lsp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveEnv makes the test binary serve the protocol on stdio (for the
// Neovim test, whose client starts it as its language server).
const serveEnv = "MUTATIS_LSP_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		s, err := NewServer(Options{})
		if err == nil {
			err = s.Serve(context.Background(), stdio{})
		}
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return nil }

// nvimScript drives Neovim's built-in LSP client (0.7 and later): it opens
// the policy, waits for the server's diagnostics, asks for the completion
// of object.spec. and a hover, and writes what it got to $OUT.
const nvimScript = `
local file, root = vim.env.POLICY, vim.env.ROOT
vim.cmd('edit ' .. file)
local id = vim.lsp.start_client({name = 'mutatis', cmd = {vim.env.SERVER}, cmd_env = {` + serveEnv + ` = '1'}, root_dir = root})
vim.lsp.buf_attach_client(0, id)
local out = {}
vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 50)
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out, string.format('diagnostic %d:%d %s', d.lnum, d.col, (d.message:gsub('\n', ' '))))
end
local client = vim.lsp.get_client_by_id(id)
local pos = {line = tonumber(vim.env.LINE), character = tonumber(vim.env.COL)}
local res = client.request_sync('textDocument/completion', {textDocument = {uri = vim.uri_from_fname(file)}, position = pos}, 60000, 0)
if res and res.result then
  for _, it in ipairs(res.result.items or res.result) do table.insert(out, 'completion ' .. it.label) end
end
pos.character = pos.character + 2
local h = client.request_sync('textDocument/hover', {textDocument = {uri = vim.uri_from_fname(file)}, position = pos}, 60000, 0)
if h and h.result then table.insert(out, 'hover ' .. (h.result.contents.value:gsub('\n', ' '))) end
vim.fn.writefile(out, vim.env.OUT)
vim.cmd('qa!')
`

// TestNeovim: a real client, Neovim's, on the sidecar-injection example
// with a misspelt field. It skips when nvim is not installed
// (apt-get install neovim).
func TestNeovim(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		t.Skip("nvim is not installed (apt-get install neovim): the Neovim client test is skipped")
	}
	root := copyExample(t, "sidecar-injection")
	policy := filepath.Join(root, "sidecar-injection", "policy.yaml")
	data, _ := os.ReadFile(policy)
	text := strings.Replace(string(data), "!object.spec.containers.exists", "!object.spec.containerz.exists", 1)
	if err := os.WriteFile(policy, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "session.lua")
	if err := os.WriteFile(script, []byte(nvimScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.txt")
	self, _ := os.Executable()
	pos := at(t, text, "!object.spec.containerz", len("!object.spec."))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "--clean", "-n", "-c", "luafile "+script)
	cmd.Env = append(os.Environ(), "POLICY="+policy, "ROOT="+root, "SERVER="+self, "OUT="+out,
		"LINE="+itoa(int(pos.Line)), "COL="+itoa(int(pos.Character)))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := string(got)
	t.Logf("Neovim's session:\n%s", lines)
	for _, want := range []string{
		`diagnostic 22:19 field "containerz" is not declared in the schema of v1 Pod`,
		"completion containers\n", "completion initContainers\n",
		"hover expression type `bool`",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("Neovim's session lacks %q:\n%s", want, lines)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
