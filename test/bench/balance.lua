-- wrk script: GET /v1/balance as many agents, one token per line of TOKENS_FILE (sandbox or OAuth access tokens).
local tokens = {}
local counter = 0

function init(args)
  for line in io.lines(os.getenv("TOKENS_FILE")) do tokens[#tokens + 1] = line end
end

function request()
  counter = counter + 1
  return wrk.format("GET", "/v1/balance", { ["Authorization"] = "Bearer " .. tokens[(counter % #tokens) + 1] })
end

function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d non2xx=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
