dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")
-- DELETE /plants/{id}, every request deleting a plant that exists. bench/compare.ts seeds the
-- plants before the rounds: wrk thread t (user t % 2, as common.lua's create numbers them) owns
-- ids id_base + t * 10^8 + 1 .. id_base + t * 10^8 + BENCH_DELETE_COUNT, and walks them in
-- turn, each once, over all its connections (a thread's connections share its Lua state). Past
-- the end of its range a thread deletes ids never made (404s, which the bench flags) and counts
-- them as `exhausted`; wrk also builds one request it never sends, whose plant stays.
local common_init = init
local common_setup = setup
local all_threads = {}

function setup(thread)
  common_setup(thread)
  table.insert(all_threads, thread)
end

function init(args)
  common_init(args)
  local count = tonumber(os.getenv("BENCH_DELETE_COUNT") or "")
  if count == nil or count < 1 then error("delete.lua: BENCH_DELETE_COUNT is not set") end
  first_id = next_id
  last_id = next_id + count
  -- Read by done(): globals, so that thread:get finds them.
  walked = 0
  exhausted = 0
end

function request()
  next_id = next_id + 1
  walked = walked + 1
  if next_id > last_id then exhausted = exhausted + 1 end
  return wrk.format("DELETE", "/plants/" .. next_id, { ["Authorization"] = auth })
end

-- One line that bench/wrk.ts reads: ids walked by the busiest thread, and past-the-end deletes.
function done(summary, latency, requests)
  local most, past = 0, 0
  for _, thread in ipairs(all_threads) do
    most = math.max(most, thread:get("walked") or 0)
    past = past + (thread:get("exhausted") or 0)
  end
  io.write("counts: most_walked=" .. most .. " exhausted=" .. past .. "\n")
end
