-- wrk script for `npm run bench:mcp`: one kind of call per run, chosen by KIND:
--   rest-balance  GET /v1/balance          mcp-balance  tools/call get_balance
--   rest-topup    POST /v1/topups          mcp-topup    tools/call top_up
-- AGENTS_FILE has one agent per line: "<token> <mcp session id>". Top-ups use a fresh key per request (RUN_ID and
-- the thread id keep keys unique across runs and threads). A response counts as refused when its status is not 2xx
-- or (MCP) its result has isError set; the count is reported as non2xx.
local threads = {}
function setup(thread)
  threads[#threads + 1] = thread
  thread:set("thread_id", #threads)
  thread:set("refused", 0)
end

local agents = {}
local counter = 0
local prefix
local kind

function init(args)
  for line in io.lines(os.getenv("AGENTS_FILE")) do
    local token, session = line:match("^(%S+)%s+(%S+)$")
    agents[#agents + 1] = { token = token, session = session }
  end
  prefix = os.getenv("RUN_ID") .. "-" .. tostring(thread_id)
  kind = os.getenv("KIND")
end

function request()
  counter = counter + 1
  local a = agents[(counter % #agents) + 1]
  local key = prefix .. "-" .. counter
  if kind == "rest-balance" then
    return wrk.format("GET", "/v1/balance", { ["Authorization"] = "Bearer " .. a.token })
  elseif kind == "rest-topup" then
    return wrk.format("POST", "/v1/topups", {
      ["Authorization"] = "Bearer " .. a.token,
      ["Idempotency-Key"] = key,
      ["Content-Type"] = "application/json",
    }, '{"credits":1}')
  end
  local params
  if kind == "mcp-balance" then
    params = '{"name":"get_balance","arguments":{}}'
  else
    params = '{"name":"top_up","arguments":{"credits":1,"idempotency_key":"' .. key .. '"}}'
  end
  return wrk.format("POST", "/mcp", {
    ["Authorization"] = "Bearer " .. a.token,
    ["Mcp-Session-Id"] = a.session,
    ["MCP-Protocol-Version"] = "2025-06-18",
    ["Accept"] = "application/json, text/event-stream",
    ["Content-Type"] = "application/json",
  }, '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"tools/call","params":' .. params .. '}')
end

function response(status, headers, body)
  if status < 200 or status >= 300 or (body and body:find('"isError":true', 1, true)) then
    refused = refused + 1
  end
end

function done(summary, latency, requests)
  local refusedTotal = 0
  for _, t in ipairs(threads) do refusedTotal = refusedTotal + t:get("refused") end
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d non2xx=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, refusedTotal, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
