dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")
-- PATCH /plants/{id} with If-Match over the seeded plants of the thread's user, in turn, so no
-- one row is hot. Seeding: before wrk starts, the bench GETs every seeded plant and writes its
-- ETag to the file named by BENCH_ETAGS (lines "<user 0|1> <id> <etag>"), so every PATCH, the
-- first included, carries a real tag; each answer's ETag is kept for that plant's next PATCH.
-- With two threads (one per user) no two threads touch the same plant; a 412 would mean the
-- bookkeeping is wrong.
local common_init = init

function init(args)
  common_init(args)
  local user = (thread_index or 0) % 2
  etags = {}
  ids = {}
  for line in io.lines(os.getenv("BENCH_ETAGS")) do
    local owner, id, etag = line:match("^(%d) (%d+) (.+)$")
    if tonumber(owner) == user then
      ids[#ids + 1] = id
      etags[id] = etag
    end
  end
  if #ids == 0 then error("update.lua: no ETags for user " .. user .. " in BENCH_ETAGS") end
  at = 0
  edits = 0
end

function request()
  at = at % #ids + 1
  edits = edits + 1
  local id = ids[at]
  return wrk.format("PATCH", "/plants/" .. id, {
    ["Authorization"] = auth,
    ["Content-Type"] = "application/json",
    ["If-Match"] = etags[id],
  }, '{"name":"Plant ' .. id .. ' edit ' .. edits .. '"}')
end

-- The answer (no id in it) names its plant through the name sent; its ETag is the one the next
-- PATCH of that plant must send.
function response(status, headers, body)
  if status ~= 200 then return end
  local id = body:match('"name":"Plant (%d+) edit')
  local etag = headers["etag"] or headers["ETag"] or headers["Etag"]
  if id and etag then etags[id] = etag end
end
