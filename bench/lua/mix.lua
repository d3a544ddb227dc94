dofile(os.getenv("BENCH_LUA_DIR") .. "/common.lua")
-- 80 % list, 15 % create, 5 % delete of a plant created earlier in the run.
local step = 0
function request()
  step = step + 1
  local slot = step % 20
  if slot < 3 then return create_request() end
  if slot == 3 then
    local delete = delete_request()
    if delete then return delete end
  end
  return list_request()
end

function response(status, headers, body)
  remember_created(status, body)
end
