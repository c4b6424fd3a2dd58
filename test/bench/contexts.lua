-- wrk script for `npm run bench:contexts`, on {api_url}: one kind of request per run, chosen by KIND.
--   get   GET /v1/contexts/<id>   TOKENS_FILE lines "<API key> <file id>": files of many principals, in turn
--   post  POST /v1/contexts       TOKENS_FILE lines "<API key>": a new file with a unique name each time
-- Each thread starts at its own place in the list. Refusals are counted apart: `limited` (429, the principal's
-- hourly allowance ran out: the run measured refusals, not the route) and non2xx (every status outside 2xx).
local threads = {}
function setup(thread)
  threads[#threads + 1] = thread
  thread:set("thread_id", #threads)
  thread:set("refused", 0)
  thread:set("limited", 0)
end

local lines = {}
local counter = 0
local prefix
local kind
local content = string.rep("Write plainly; cut what the reader does not need. ", 8)

function init(args)
  for line in io.lines(os.getenv("TOKENS_FILE")) do
    if line ~= "" then
      local key, id = line:match("^(%S+)%s*(%S*)$")
      lines[#lines + 1] = { key = key, id = id }
    end
  end
  prefix = os.getenv("RUN_ID") .. "-" .. tostring(thread_id)
  kind = os.getenv("KIND")
  counter = (thread_id - 1) * 7919
end

function request()
  counter = counter + 1
  local l = lines[(counter % #lines) + 1]
  if kind == "get" then
    return wrk.format("GET", "/v1/contexts/" .. l.id, { ["Authorization"] = "Bearer " .. l.key })
  end
  return wrk.format("POST", "/v1/contexts", {
    ["Authorization"] = "Bearer " .. l.key,
    ["Content-Type"] = "application/json",
  }, '{"name":"Bench ' .. prefix .. '-' .. counter .. '","content":"' .. content .. '"}')
end

function response(status, headers, body)
  if status < 200 or status >= 300 then refused = refused + 1 end
  if status == 429 then limited = limited + 1 end
end

function done(summary, latency, requests)
  local refusedTotal, limitedTotal = 0, 0
  for _, t in ipairs(threads) do
    refusedTotal = refusedTotal + t:get("refused")
    limitedTotal = limitedTotal + t:get("limited")
  end
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d non2xx=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, refusedTotal, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  io.write(string.format("LIMITED %d\n", limitedTotal))
end
