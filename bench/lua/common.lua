-- Shared by the scenarios: each wrk thread acts as one user (tokens alternate by thread) and
-- numbers its new plants from a base that no other thread, round or scenario uses.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("thread_index", #threads)
  table.insert(threads, thread)
end

function init(args)
  -- args: token_a token_b id_base
  local tokens = { args[1], args[2] }
  local index = thread_index or 0
  token = tokens[(index % 2) + 1]
  next_id = tonumber(args[3]) + index * 100000000
  created = {}
  created_head = 1
  created_tail = 0
  auth = "Bearer " .. token
end

function create_request()
  next_id = next_id + 1
  return wrk.format("POST", "/plants", {
    ["Authorization"] = auth,
    ["Content-Type"] = "application/json",
  }, '{"id":' .. next_id .. ',"name":"Plant ' .. next_id .. '","tag":"bench"}')
end

function list_request()
  return wrk.format("GET", "/plants?limit=20", { ["Authorization"] = auth })
end

-- A delete takes a plant whose create has been answered (its name carries its id), so a
-- delete never races its own create; wrk also builds one request it never sends.
function delete_request()
  if created_head > created_tail then return nil end
  local id = created[created_head]
  created[created_head] = nil
  created_head = created_head + 1
  return wrk.format("DELETE", "/plants/" .. id, { ["Authorization"] = auth })
end

function remember_created(status, body)
  if status ~= 200 then return end
  local id = body:match('"name":"Plant (%d+)"')
  if id then
    created_tail = created_tail + 1
    created[created_tail] = id
  end
end
