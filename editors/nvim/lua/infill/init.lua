-- infill for Neovim: starts `infill lsp` for the configured filetypes and shows its
-- suggestions as ghost text (Neovim 0.12+: vim.lsp.inline_completion), or through the
-- completion menu on older versions (vim.lsp.completion on 0.11, omnifunc before that).
--
--   require("infill").setup({ filetypes = { "python" }, accept_key = "<Tab>" })

local M = {}

local defaults = {
  cmd = { "infill", "lsp" }, -- how to start the server
  filetypes = { "python", "javascript", "javascriptreact", "typescript", "typescriptreact", "go", "rust" },
  root_markers = { ".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml" },
  model_dir = nil, -- nil = the model embedded in infill
  settings = {}, -- the "infill" section: debounceMs, maxTokens, constrained, temperature, ...
  accept_key = "<Tab>", -- insert-mode key that accepts the ghost text (falls through when none)
  next_key = "<M-]>", -- cycle suggestions (0.12+)
  inline = true, -- false: always use the completion menu, even on 0.12+
}

M.config = vim.deepcopy(defaults)

--- Which way suggestions are shown on this Neovim: "inline", "completion" or "omnifunc".
function M.mode()
  if M.config.inline and vim.lsp.inline_completion and vim.lsp.inline_completion.enable then
    return "inline"
  end
  if vim.lsp.completion and vim.lsp.completion.enable then
    return "completion"
  end
  return "omnifunc"
end

local function settings_section()
  local section = vim.deepcopy(M.config.settings or {})
  if M.config.model_dir then
    section.modelDir = M.config.model_dir
  end
  return section
end

local function on_attach(client, bufnr)
  local mode = M.mode()
  if mode == "inline" then
    -- (0.12 takes bufnr or client_id, not both; the buffer is the narrower scope)
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
    if M.config.accept_key then
      vim.keymap.set("i", M.config.accept_key, function()
        if not vim.lsp.inline_completion.get({ bufnr = bufnr }) then
          return M.config.accept_key -- no suggestion: the key does what it always did
        end
      end, { buffer = bufnr, expr = true, replace_keycodes = true, desc = "infill: accept suggestion" })
    end
    if M.config.next_key and vim.lsp.inline_completion.select then
      vim.keymap.set("i", M.config.next_key, function()
        vim.lsp.inline_completion.select({ bufnr = bufnr })
      end, { buffer = bufnr, desc = "infill: next suggestion" })
    end
  elseif mode == "completion" then
    vim.lsp.completion.enable(true, client.id, bufnr, { autotrigger = true })
  else
    vim.bo[bufnr].omnifunc = "v:lua.vim.lsp.omnifunc"
  end
end

local function root_dir(bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local found = vim.fs.find(M.config.root_markers, { path = vim.fs.dirname(path), upward = true })[1]
  return found and vim.fs.dirname(found) or vim.fs.dirname(path)
end

--- Start (or reuse) the server for one buffer.
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  local section = settings_section()
  return vim.lsp.start({
    name = "infill",
    cmd = M.config.cmd,
    root_dir = root_dir(bufnr),
    init_options = section,
    settings = { infill = section },
    on_attach = on_attach,
  }, { bufnr = bufnr })
end

--- The server's `infill/stats` (shown/accepted counts, latency percentiles), or nil.
function M.stats(timeout_ms)
  local client = vim.lsp.get_clients({ name = "infill" })[1]
  if not client then
    return nil
  end
  local reply
  if vim.fn.has("nvim-0.11") == 1 then
    reply = client:request_sync("infill/stats", {}, timeout_ms or 2000, 0)
  else -- before 0.11 client methods took no self
    reply = client.request_sync("infill/stats", {}, timeout_ms or 2000, 0)
  end
  return reply and reply.result or nil
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  local group = vim.api.nvim_create_augroup("infill", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = M.config.filetypes,
    callback = function(event)
      M.attach(event.buf)
    end,
  })
  -- Buffers already open when setup() runs (e.g. the file given on the command line).
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(M.config.filetypes, vim.bo[bufnr].filetype) then
      M.attach(bufnr)
    end
  end
  vim.api.nvim_create_user_command("InfillStats", function()
    print(vim.inspect(M.stats()))
  end, { desc = "infill: show the language server's stats" })
end

return M
