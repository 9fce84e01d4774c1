-- wrk script for `npm run bench` (bench/run.ts drives it; not meant to be run by hand).
-- The request comes from the environment, so that one script serves every scenario:
--   SVC_WRK_METHOD       HTTP method
--   SVC_WRK_BODY_FILE    the body, sent as is (optional)
--   SVC_WRK_UNIQUE       "1": every "[<id>]" in the body becomes an id unique to the request
--   SVC_WRK_BODIES_FILE  one body per line, each sent once (single-use bodies such as signed assertions)
--   SVC_WRK_OFFSET       the first line of that file to use (the warm-up has used the ones before)
--   SVC_WRK_RUN          a tag that makes the unique ids of this run differ from those of other runs
-- Headers come from wrk's -H flags. At the end one JSON line goes to stdout with the totals.

local function slurp(name)
  local f = assert(io.open(name, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local thread_count = 0
function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

local method = os.getenv("SVC_WRK_METHOD") or "GET"
local body = nil
local unique = os.getenv("SVC_WRK_UNIQUE") == "1"
local bodies = nil
local next_line = 0
local stride = 1
local sent = 0
local run = os.getenv("SVC_WRK_RUN") or "run"

function init(args)
  local threads = tonumber(args[1] or "1")
  local body_file = os.getenv("SVC_WRK_BODY_FILE")
  if body_file and body_file ~= "" then body = slurp(body_file) end
  local bodies_file = os.getenv("SVC_WRK_BODIES_FILE")
  if bodies_file and bodies_file ~= "" then
    bodies = {}
    for line in io.lines(bodies_file) do
      if line ~= "" then bodies[#bodies + 1] = line end
    end
    -- Threads take interleaved lines, so that no two send the same body.
    stride = threads
    next_line = tonumber(os.getenv("SVC_WRK_OFFSET") or "0") + (thread_index or 0)
  end
  if not unique and not bodies then
    wrk.method = method
    wrk.body = body
  end
end

-- Only defined when the body varies: a static request is formatted once by wrk itself.
if os.getenv("SVC_WRK_UNIQUE") == "1" or (os.getenv("SVC_WRK_BODIES_FILE") or "") ~= "" then
  function request()
    local b
    if bodies then
      b = bodies[(next_line % #bodies) + 1]
      next_line = next_line + stride
    else
      sent = sent + 1
      local id = run .. "-" .. tostring(thread_index or 0) .. "-" .. tostring(sent)
      b = string.gsub(body, "%[<id>%]", id)
    end
    return wrk.format(method, nil, nil, b)
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
