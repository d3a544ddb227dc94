dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")
function request() return create_request() end
