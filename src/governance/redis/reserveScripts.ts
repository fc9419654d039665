// Lua scripts that reserve a slice of a shared budget atomically: debit what a replica admitted on credit,
// then grant up to `want` of what is left. Redis runs each script alone, so replicas never double-spend.
//
// The scripts trust no argument (a replica of another version, or a bug, must not poison a key every replica
// shares): numbers that are missing, NaN or not positive where they must be are an error and change nothing;
// want and debt count at most one burst (a fixed window's limit); and a bucket is never below minus one burst,
// so it is usable again at most two bursts' refill time after any reservation (a bucket found lower, written by
// an older version, is raised to that floor). A bucket key lives as long as it takes to refill from the floor,
// plus a minute, so its expiry never grants more than refilling would have.

/** KEYS[1] the bucket hash; ARGV rate per second, burst, the admission time (ms), want, debt. */
export const RESERVE_TOKENS = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local at = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local debt = tonumber(ARGV[5])
if not (rate and burst and at and want and debt) or rate ~= rate or burst ~= burst or at ~= at or want ~= want or debt ~= debt
  or rate <= 0 or burst <= 0 or rate == math.huge or burst == math.huge or at == math.huge or at == -math.huge then
  return redis.error_reply('ERR reserve: rate and burst must be positive and finite, at, want and debt numbers')
end
want = math.max(0, math.min(want, burst))
debt = math.max(0, math.min(debt, burst))
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ms')
local tokens = tonumber(state[1])
local ms = tonumber(state[2])
if tokens == nil or ms == nil or tokens ~= tokens or ms ~= ms then
  tokens = burst
  ms = at
end
if tokens < -burst then tokens = -burst end
if at > ms then
  tokens = tokens + (at - ms) * rate / 1000
  ms = at
end
if tokens > burst then tokens = burst end
tokens = tokens - debt
if tokens < -burst then tokens = -burst end
local grant = 0
if tokens >= want then grant = want elseif tokens >= 1 then grant = math.floor(tokens) end
tokens = tokens - grant
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ms', tostring(ms))
redis.call('PEXPIRE', KEYS[1], math.ceil(2 * burst * 1000 / rate) + 60000)
return grant
`;

/** KEYS[1] the counter of one window; ARGV limit, want, debt. */
export const RESERVE_WINDOW = `
local limit = tonumber(ARGV[1])
local want = tonumber(ARGV[2])
local debt = tonumber(ARGV[3])
if not (limit and want and debt) or limit ~= limit or want ~= want or debt ~= debt or limit <= 0 or limit == math.huge then
  return redis.error_reply('ERR reserve: limit must be positive and finite, want and debt numbers')
end
want = math.max(0, math.min(want, limit))
debt = math.max(0, math.min(debt, limit))
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used == nil or used ~= used then used = 0 end
used = math.min(used + debt, limit)
local grant = math.max(0, math.min(want, limit - used))
redis.call('SET', KEYS[1], tostring(used + grant), 'PX', 5000)
return grant
`;

/**
 * KEYS[1] the count of one quota period; ARGV limit, want, the period's end (ms). Grants never pass the limit,
 * and a replica admits only what it was granted (quotaMeter.ts), so the count is exact.
 * Returns { granted, left }. The count expires a day after its period ends.
 */
export const RESERVE_QUOTA = `
local limit = tonumber(ARGV[1])
local want = tonumber(ARGV[2])
local endMs = tonumber(ARGV[3])
if not (limit and want and endMs) or limit ~= limit or want ~= want or endMs ~= endMs
  or limit <= 0 or limit == math.huge or endMs == math.huge or endMs == -math.huge then
  return redis.error_reply('ERR reserve quota: limit must be positive and finite, want and end numbers')
end
want = math.max(0, math.min(want, limit))
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used == nil or used ~= used then used = 0 end
local grant = math.max(0, math.min(want, limit - used))
used = used + grant
local nowMs = tonumber(redis.call('TIME')[1]) * 1000
redis.call('SET', KEYS[1], tostring(used), 'PX', math.max(60000, endMs - nowMs + 86400000))
return { grant, math.max(0, limit - used) }
`;
