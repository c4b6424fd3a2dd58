-- wrk script: GET one path (DELIVERY_PATH) as one buyer (the first token of TOKENS_FILE): its order's content.
local token

function init(args)
  for line in io.lines(os.getenv("TOKENS_FILE")) do token = token or line end
end

function request()
  return wrk.format("GET", os.getenv("DELIVERY_PATH"), { ["Authorization"] = "Bearer " .. token })
end

function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d non2xx=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
