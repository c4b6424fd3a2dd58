-- wrk script: POST /v1/orders as many agents over many listings, each request with a fresh Idempotency-Key.
-- TOKENS_FILE and LISTINGS_FILE hold one token / listing id per line; RUN_ID keeps keys unique across runs.
local threadCount = 0
function setup(thread)
  threadCount = threadCount + 1
  thread:set("thread_id", threadCount)
end

local tokens = {}
local listings = {}
-- COUNTER_START lets consecutive runs continue the walk over listings instead of repeating its start.
local counter = tonumber(os.getenv("COUNTER_START") or "0")
local prefix

function init(args)
  for line in io.lines(os.getenv("TOKENS_FILE")) do tokens[#tokens + 1] = line end
  for line in io.lines(os.getenv("LISTINGS_FILE")) do listings[#listings + 1] = line end
  prefix = os.getenv("RUN_ID") .. "-" .. tostring(thread_id)
end

function request()
  counter = counter + 1
  local token = tokens[(counter % #tokens) + 1]
  local listing = listings[((counter * 7919) % #listings) + 1]
  return wrk.format("POST", "/v1/orders", {
    ["Authorization"] = "Bearer " .. token,
    ["Idempotency-Key"] = prefix .. "-" .. counter,
    ["Content-Type"] = "application/json",
  }, '{"listing_id":"' .. listing .. '","formats":["md"]}')
end

function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d non2xx=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
