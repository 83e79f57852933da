-- wrk done() hook: print the summary as one JSON line that loadtest/tools/wrk.py
-- parses (wrk's own text report rounds values and changes units).
-- Latencies are in microseconds, as wrk keeps them.

-- (percentile(100) reads 0 in wrk 4.1: the maximum is reported as "max" instead.)
local points = {1, 5, 10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 90, 95, 97.5, 99, 99.5, 99.9, 99.99}

local function num(value)
  if value == nil or value ~= value then -- nil or NaN
    return "null"
  end
  return string.format("%.3f", value)
end

done = function(summary, latency, requests)
  local e = summary.errors
  -- When no response arrived (every request timed out or failed) wrk's latency
  -- statistics are empty and its minimum is garbage (-9223372036854775808):
  -- report no latency at all rather than nonsense.
  local valid = summary.requests > 0 and latency.min >= 0 and latency.max > 0
  local parts = {}
  local curve = {}
  if valid then
    for _, p in ipairs(points) do
      curve[#curve + 1] = string.format("[%g,%s]", p, num(latency:percentile(p)))
    end
  end
  parts[#parts + 1] = string.format('"duration_us":%d', summary.duration)
  parts[#parts + 1] = string.format('"requests":%d', summary.requests)
  parts[#parts + 1] = string.format('"bytes":%d', summary.bytes)
  parts[#parts + 1] = string.format(
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}',
    e.connect, e.read, e.write, e.status, e.timeout)
  if valid then
    parts[#parts + 1] = string.format(
      '"latency_us":{"min":%s,"max":%s,"mean":%s,"stdev":%s}',
      num(latency.min), num(latency.max), num(latency.mean), num(latency.stdev))
  else
    parts[#parts + 1] = '"latency_us":null'
  end
  parts[#parts + 1] = '"percentiles_us":[' .. table.concat(curve, ",") .. ']'
  io.write("SERVERLAB_WRK_JSON {" .. table.concat(parts, ",") .. "}\n")
end
