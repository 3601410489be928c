-- Drive the dpmlens language server from headless Neovim (0.7+) and write what it saw as JSON.
-- Environment: DPMLENS_NVIM_CMD (tab-separated server command), DPMLENS_NVIM_FILE (a C file),
-- DPMLENS_NVIM_ROOT (workspace), DPMLENS_NVIM_OUT (result path).
local out_path = os.getenv("DPMLENS_NVIM_OUT")
local result = { steps = {} }

local function has_code(diags, code)
  for _, d in ipairs(diags or {}) do
    if d.code == code then return d end
  end
  return nil
end

local function run()
  local file = os.getenv("DPMLENS_NVIM_FILE")
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(bufnr)
  local latest = nil
  local client_id = vim.lsp.start_client({
    name = "dpmlens",
    cmd = vim.split(os.getenv("DPMLENS_NVIM_CMD"), "\t"),
    root_dir = os.getenv("DPMLENS_NVIM_ROOT"),
    init_options = { debounceMs = 0, traceGlobs = {} },
    flags = { debounce_text_changes = 0 },
    handlers = {
      ["textDocument/publishDiagnostics"] = function(err, params, ctx, config)
        if params.uri == uri then latest = params.diagnostics end
        return vim.lsp.handlers["textDocument/publishDiagnostics"](err, params, ctx, config)
      end,
    },
  })
  assert(client_id, "vim.lsp.start_client failed")
  vim.lsp.buf_attach_client(bufnr, client_id)

  -- 1. diagnostics on open
  assert(vim.wait(30000, function() return has_code(latest, "msleep-under-20ms") ~= nil end, 50),
         "no msleep-under-20ms diagnostic after open")
  local d = has_code(latest, "msleep-under-20ms")
  result.open = { line = d.range.start.line, character = d.range.start.character,
                  source = d.source, href = d.codeDescription and d.codeDescription.href }
  table.insert(result.steps, "open")

  -- 2. edit the buffer (Neovim sends an incremental didChange): delete the msleep line
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  for i, l in ipairs(lines) do
    if l:find("msleep%(5%)") then
      vim.api.nvim_buf_set_lines(bufnr, i - 1, i, false, {})
      break
    end
  end
  assert(vim.wait(30000, function()
    return latest ~= nil and has_code(latest, "msleep-under-20ms") == nil
  end, 50), "msleep-under-20ms still reported after the edit")
  table.insert(result.steps, "edit")

  -- 3. hover on the .suspend_noirq member
  local client = vim.lsp.get_client_by_id(client_id)
  lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local hline, hcol
  for i, l in ipairs(lines) do
    local c = l:find("%.suspend_noirq")
    if c then hline, hcol = i - 1, c + 1 break end
  end
  local resp = client.request_sync("textDocument/hover", {
    textDocument = { uri = uri }, position = { line = hline, character = hcol },
  }, 10000, bufnr)
  assert(resp and resp.result, "no hover result: " .. vim.inspect(resp))
  result.hover = resp.result.contents.value
  table.insert(result.steps, "hover")

  -- 4. a command
  resp = client.request_sync("workspace/executeCommand", {
    command = "dpmlens.explainRule", arguments = { "msleep-under-20ms" },
  }, 10000, bufnr)
  assert(resp and resp.result, "explainRule failed: " .. vim.inspect(resp))
  result.explain = resp.result.id
  table.insert(result.steps, "command")

  client.stop()
  vim.wait(5000, function() return client.is_stopped() end, 50)
end

local ok, err = pcall(run)
if not ok then result.error = tostring(err) end
local f = io.open(out_path, "w")
f:write(vim.fn.json_encode(result))
f:close()
vim.cmd("qa!")
