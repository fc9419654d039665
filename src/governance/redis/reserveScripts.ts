// Lua scripts that reserve a slice of a shared budget atomically: debit what a replica admitted on credit,
// then grant up to `want` of what is left. Redis runs each script alone, so replicas never double-spend.

/** KEYS[1] the bucket hash; ARGV rate per second, burst, the admission time (ms), want, debt. */
export const RESERVE_TOKENS = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local at = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local debt = tonumber(ARGV[5])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ms')
local tokens = tonumber(state[1])
local ms = tonumber(state[2])
if tokens == nil or ms == nil then
  tokens = burst
  ms = at
end
if at > ms then
  tokens = tokens + (at - ms) * rate / 1000
  ms = at
end
if tokens > burst then tokens = burst end
tokens = tokens - debt
local grant = 0
if tokens >= want then grant = want elseif tokens >= 1 then grant = math.floor(tokens) end
tokens = tokens - grant
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ms', tostring(ms))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 60000)
return grant
`;

/** KEYS[1] the counter of one window; ARGV limit, want, debt. */
export const RESERVE_WINDOW = `
local limit = tonumber(ARGV[1])
local want = tonumber(ARGV[2])
local debt = tonumber(ARGV[3])
local used = tonumber(redis.call('GET', KEYS[1]) or '0') + debt
local grant = math.max(0, math.min(want, limit - used))
redis.call('SET', KEYS[1], tostring(used + grant), 'PX', 5000)
return grant
`;
