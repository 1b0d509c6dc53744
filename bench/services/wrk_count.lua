-- wrk_count.lua: makes wrk (run with -t1) a fixed-work load for
-- bench/services/run.sh: the process exits once WRK_N responses have come
-- back, instead of running for wrk's -d duration. (wrk's thread:stop()
-- only ends a thread; the process still waits out -d.)
local n = 0
local limit = tonumber(os.getenv("WRK_N") or "100000")

function response(status, headers, body)
    n = n + 1
    if n >= limit then
        io.write("responses ", n, "\n")
        io.flush()
        os.exit(0)
    end
end
