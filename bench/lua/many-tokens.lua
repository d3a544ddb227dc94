-- bench/compare.ts: one of the read, write and mix scenarios (named by the BENCH_SCENARIO
-- environment variable, loaded unchanged) with each thread's requests spread over many tokens
-- of its user, one after the other, so that the service's default per-token rate limit
-- (RATE_LIMIT_PER_MINUTE) does not answer most of the load with 429.
--
-- args: id_base per_user token_a1 .. token_aN token_b1 .. token_bN
--
-- The scenario is loaded here, not in init: wrk looks for request() and response() in a
-- thread's script after init, and read.lua and write.lua define no response() (so wrk reads
-- no bodies for them).
local scenario = os.getenv("BENCH_SCENARIO")
if scenario == nil or scenario == "" then error("many-tokens.lua: BENCH_SCENARIO is not set") end
dofile(os.getenv("BENCH_LUA_DIR") .. "/" .. scenario .. ".lua")

local scenario_init = init
local scenario_request = request

function init(args)
  local per_user = tonumber(args[2])
  local first = 3 + ((thread_index or 0) % 2) * per_user
  -- common.lua's init: the thread's first token, ids past id_base, the created-plants queue.
  scenario_init({ args[3], args[3 + per_user], args[1] })
  bearers = {}
  for i = first, first + per_user - 1 do bearers[#bearers + 1] = "Bearer " .. args[i] end
  turn = 0
end

function request()
  turn = turn % #bearers + 1
  auth = bearers[turn]
  return scenario_request()
end
