-- wrk-post.lua — POSTs JSON-RPC requests for bench/http.sh.
--
--   A2M_BODIES=FILE wrk -s bench/wrk-post.lua ... URL
--
-- FILE holds one request per line (`a2m bench corpus` writes them). One
-- line: that body on every request, prepared once (wrk's fastest path, the
-- same for a2m and for nginx). Several: each connection cycles through them.
-- Responses are not parsed here (it would slow wrk down); bench/http.sh
-- checks one answer of each kind with curl before it measures.

local path = os.getenv("A2M_BODIES")
assert(path, "set A2M_BODIES to a file of JSON-RPC requests, one per line")
local bodies = {}
for line in io.lines(path) do
    if #line > 0 then bodies[#bodies + 1] = line end
end
assert(#bodies > 0, "no request in " .. path)

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

if #bodies == 1 then
    wrk.body = bodies[1]
else
    local requests, i = {}, 0
    -- init runs once wrk has set the Host header; format then includes it.
    function init(args)
        for k, b in ipairs(bodies) do requests[k] = wrk.format(nil, nil, nil, b) end
    end
    function request()
        i = i % #requests + 1
        return requests[i]
    end
end
