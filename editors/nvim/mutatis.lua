-- mutatis lsp in Neovim (0.10 or later, its built-in LSP client; no plugin
-- needed). Put this file on the runtimepath (e.g. ~/.config/nvim/plugin/)
-- or paste it into init.lua. With nvim-lspconfig, the same table goes to
-- vim.lsp.config('mutatis', …) on Neovim 0.11.
vim.api.nvim_create_autocmd('FileType', {
  pattern = { 'yaml', 'json' },
  callback = function(args)
    local root = vim.fs.root(args.buf, { '.git', 'go.mod' }) or vim.fn.getcwd()
    vim.lsp.start({
      name = 'mutatis',
      cmd = { 'mutatis', 'lsp' },
      root_dir = root,
    }, { bufnr = args.buf })
  end,
})
