-- wrk done() hook: print the summary as one JSON line that loadtest/tools/wrk.py
-- parses (wrk's own text report rounds values and changes units).
-- Latencies are in microseconds, as wrk keeps them.
--
-- With `-- histogram` after the URL, the line also carries wrk's whole latency
-- histogram, "histogram_us":[[value,count],...] ascending, so that the runs of
-- several client hosts can be merged into exact percentiles
-- (loadtest/measure/tools/group.py). `-- histogram=SECONDS` sets the CPU budget
-- of that export (default below).

-- (percentile(100) reads 0 in wrk 4.1: the maximum is reported as "max" instead.)
local points = {1, 5, 10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 90, 95, 97.5, 99, 99.5, 99.9, 99.99}

-- latency(i) scans wrk's array from the minimum every time, so the export
-- costs distinct values x range: a run with a long tail could take minutes.
-- Past this many CPU seconds the export stops and says it is truncated.
local HISTOGRAM_BUDGET_S = 5.0

-- wrk hands the arguments after `--` to init() in each thread's own Lua state
-- only; done() runs in the main state, which reads the choice back through
-- the thread objects that setup() keeps (thread:get reads a thread's global).
local threads = {}

setup = function(thread)
  threads[#threads + 1] = thread
end

init = function(args)
  for _, arg in pairs(args) do -- args[0] is the URL
    if arg == "histogram" then
      histogram_budget_s = HISTOGRAM_BUDGET_S
    elseif type(arg) == "string" and arg:match("^histogram=") then
      histogram_budget_s = tonumber(arg:sub(#"histogram=" + 1))
    end
  end
end

local function num(value)
  if value == nil or value ~= value then -- nil or NaN
    return "null"
  end
  return string.format("%.3f", value)
end

local function histogram_budget()
  if #threads == 0 then
    return nil
  end
  return threads[1]:get("histogram_budget_s")
end

-- The histogram as JSON pairs, or nil when the budget ran out; and the CPU
-- seconds the export took (the harness takes them out of the tool's own time).
local function histogram_pairs(latency, valid, budget_s)
  local started = os.clock()
  local items = {}
  if valid then
    for i = 1, #latency do
      if os.clock() - started > budget_s then
        return nil, os.clock() - started
      end
      local value, count = latency(i)
      items[i] = string.format("[%d,%d]", value, count)
    end
  end
  return "[" .. table.concat(items, ",") .. "]", os.clock() - started
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
  local budget_s = histogram_budget()
  if budget_s then
    local histogram, cpu_s = histogram_pairs(latency, valid, budget_s)
    parts[#parts + 1] = '"histogram_us":' .. (histogram or "null")
    parts[#parts + 1] = '"histogram_truncated":' .. tostring(histogram == nil)
    parts[#parts + 1] = string.format('"histogram_cpu_s":%.6f', cpu_s)
  end
  io.write("SERVERLAB_WRK_JSON {" .. table.concat(parts, ",") .. "}\n")
end
