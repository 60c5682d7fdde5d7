-- One screenshot's Neovim session (editors/screenshots/capture.sh): the
-- built-in LSP client (Neovim 0.7 and later) on $POLICY with `mutatis lsp`,
-- then, once the server's diagnostics are in, $SHOT: "diagnostic" (the
-- cursor on the first one, its message shown), "completion" (omni
-- completion after $MARKER) or "hover" (the hover of $MARKER's end).
-- When the screen shows the answer, it writes $READY.
local file, root = vim.env.POLICY, vim.env.ROOT
vim.o.number = true
vim.o.signcolumn = 'yes'
vim.o.laststatus = 0
vim.o.ruler = false
vim.o.showmode = false
vim.o.completeopt = 'menuone,noinsert'
vim.o.pumheight = 12
vim.cmd('syntax on')
-- Neovim 0.7's floating windows and menus are magenta by default.
vim.cmd('highlight NormalFloat ctermfg=252 ctermbg=237 guifg=#d0d0d0 guibg=#3a3a3a')
vim.cmd('highlight FloatBorder ctermfg=244 ctermbg=237')
vim.cmd('highlight Pmenu ctermfg=252 ctermbg=237')
vim.cmd('highlight PmenuSel ctermfg=231 ctermbg=25')
vim.cmd('highlight PmenuSbar ctermbg=237')
vim.cmd('highlight PmenuThumb ctermbg=244')
vim.cmd('highlight DiagnosticFloatingError ctermfg=210 ctermbg=237')
vim.cmd('edit ' .. file)
local id = vim.lsp.start_client({name = 'mutatis', cmd = {vim.env.MUTATIS, 'lsp'}, root_dir = root})
vim.lsp.buf_attach_client(0, id)
vim.bo.omnifunc = 'v:lua.vim.lsp.omnifunc'
vim.diagnostic.config({virtual_text = true, signs = true, underline = true, float = {border = 'single'}})

local function ready()
  vim.defer_fn(function() vim.fn.writefile({'ready'}, vim.env.READY) end, 1500)
end

local function find(marker)
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  for i, l in ipairs(lines) do
    local s, e = l:find(marker, 1, true)
    if s then return i, e end
  end
end

vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local shot = vim.env.SHOT
if shot == 'diagnostic' then
  local d = vim.diagnostic.get(0)[1]
  vim.api.nvim_win_set_cursor(0, {d.lnum + 1, d.col})
  vim.cmd('normal! zz')
  vim.diagnostic.open_float(0, {scope = 'cursor', border = 'single'})
  ready()
elseif shot == 'completion' then
  local l, e = find(vim.env.MARKER)
  vim.api.nvim_win_set_cursor(0, {l, e - 1})
  vim.cmd('normal! zt')
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('a<C-x><C-o>', true, false, true), 'n', false)
  ready()
else
  local l, e = find(vim.env.MARKER)
  vim.api.nvim_win_set_cursor(0, {l, e - 2})
  vim.cmd('normal! zt')
  vim.lsp.buf.hover()
  ready()
end
