-- wrk script: GET /v1/search with a mix of filters, as many agents. Tokens from TOKENS_FILE, one per line.
local tokens = {}
local counter = 0
local queries = {
  "/v1/search",
  "/v1/search?topic=postgresql",
  "/v1/search?topic=vacuum%20bloat",
  "/v1/search?floor=0.8",
  "/v1/search?max_price=300",
  "/v1/search?topic=kubernetes&floor=0.7&max_price=2000",
  "/v1/search?type=context_file&limit=20",
  "/v1/search?topic=signatures&max_price=1000",
}

function init(args)
  for line in io.lines(os.getenv("TOKENS_FILE")) do tokens[#tokens + 1] = line end
end

function request()
  counter = counter + 1
  return wrk.format("GET", queries[(counter % #queries) + 1], { ["Authorization"] = "Bearer " .. tokens[(counter % #tokens) + 1] })
end

function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d non2xx=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
