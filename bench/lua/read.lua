dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")
function request() return list_request() end
