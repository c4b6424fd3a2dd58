-- wrk script: POST /v1/topups as many agents, each request with a fresh Idempotency-Key.
-- Tokens come from the file named by TOKENS_FILE (one per line); RUN_ID makes keys unique across runs, and
-- setup() gives each wrk thread its own id so threads never reuse each other's keys.
local threadCount = 0
function setup(thread)
  threadCount = threadCount + 1
  thread:set("thread_id", threadCount)
end

local tokens = {}
local counter = 0
local prefix

function init(args)
  for line in io.lines(os.getenv("TOKENS_FILE")) do tokens[#tokens + 1] = line end
  prefix = os.getenv("RUN_ID") .. "-" .. tostring(thread_id)
end

function request()
  counter = counter + 1
  local token = tokens[(counter % #tokens) + 1]
  return wrk.format("POST", "/v1/topups", {
    ["Authorization"] = "Bearer " .. token,
    ["Idempotency-Key"] = prefix .. "-" .. counter,
    ["Content-Type"] = "application/json",
  }, '{"credits":1}')
end

function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d non2xx=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
