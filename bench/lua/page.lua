-- The page scenario: one owner's plants read page by page, GET /plants?limit=20, each request
-- following the `next` link of an earlier answer, as a client walking its list does.
--
-- args: token max_id restart_every tag_share tag...   (tags already percent-encoded)
--
-- wrk keeps one Lua state per thread and does not say which connection an answer came on, so
-- a thread keeps a queue of the links its answers named: a request takes the oldest, and an
-- answer adds its link. About as many walks as the thread has connections are under way at
-- once. A walk ends at its last page (no link), or at random with chance 1 / restart_every
-- before each page (on average every restart_every pages); a new one starts after a random id
-- in 0..max_id, with a share tag_share of them filtered by a tag chosen uniformly from the list.
local threads = {}

function setup(thread)
  thread:set("thread_index", #threads)
  table.insert(threads, thread)
end

function init(args)
  headers = { ["Authorization"] = "Bearer " .. args[1] }
  max_id = tonumber(args[2])
  restart_every = tonumber(args[3])
  tag_share = tonumber(args[4])
  tags = {}
  for i = 5, #args do tags[#tags + 1] = args[i] end
  math.randomseed(os.time() * 100 + (thread_index or 0))
  links = {}
  head = 1
  tail = 0
  -- Read by done(): globals, so that thread:get finds them.
  followed = 0
  started = 0
  tagged = 0
  last_pages = 0
  bad_links = 0
end

local function start_walk()
  started = started + 1
  local path = "/plants?limit=20&after=" .. math.random(0, max_id)
  if #tags > 0 and math.random() < tag_share then
    tagged = tagged + 1
    path = path .. "&tag=" .. tags[math.random(#tags)]
  end
  return path
end

function request()
  local path
  if head <= tail then
    path = links[head]
    links[head] = nil
    head = head + 1
    if math.random(restart_every) == 1 then path = nil end
  end
  if path then
    followed = followed + 1
  else
    path = start_walk()
  end
  return wrk.format("GET", path, headers)
end

function response(status, response_headers, body)
  if status ~= 200 then return end
  local link = response_headers["Link"] or response_headers["link"]
  if not link then
    last_pages = last_pages + 1
    return
  end
  local target = link:match('^<(/plants%?[^>]+)>; rel="next"$')
  if target then
    tail = tail + 1
    links[tail] = target
  else
    bad_links = bad_links + 1
  end
end

-- One line that bench/wrk.ts reads: how the requests were made and how the walks ended.
function done(summary, latency, requests)
  local names = { "followed", "started", "tagged", "last_pages", "bad_links" }
  local totals = {}
  for _, name in ipairs(names) do totals[name] = 0 end
  for _, thread in ipairs(threads) do
    for _, name in ipairs(names) do totals[name] = totals[name] + (thread:get(name) or 0) end
  end
  local words = {}
  for _, name in ipairs(names) do words[#words + 1] = name .. "=" .. totals[name] end
  io.write("counts: " .. table.concat(words, " ") .. "\n")
end
