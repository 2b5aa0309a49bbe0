// The server-side half of a batch claim (Tapjoy's "one Lua call per batch"): for each
// record, look its id up in the time slots of the window (older ones first); absent ->
// claim it in the current slot (mode "claim") or leave it (mode "check"); present with
// another owner -> report it. Only those reports travel back: a batch without
// duplicates answers with an empty array.
//
// ARGV: key prefix, current slot, slots to consult, PEXPIREAT of the current slot's
// buckets (ms), mode, owner length, layout, then per record: slice, field, value.
// Reply: flat array of (record number within this call, 1-based; the stored value).
// Repeats inside one call are handled in order: the first claims, the rest see it.
//
// The layout (bucket.span and bucket.slices, which decide the key a claim is in) is kept
// beside the claims, as `<prefix>layout`, and lives as long as the newest of them: a
// call with another layout while it lives is refused with "EXACTLY_LAYOUT <stored>"
// (ids claimed before would be looked for in the wrong keys and their duplicates pass),
// on every host, across restarts and reloads alike.
#pragma once

namespace exactly::dedupe::redis {

inline constexpr const char* kClaimScript = R"lua(
local prefix = ARGV[1]
local cur = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local expire_at = ARGV[4]
local claim = ARGV[5] == 'claim'
local olen = tonumber(ARGV[6])
local layout = ARGV[7]
local mark = prefix .. 'layout'
local stored = redis.call('GET', mark)
if stored and stored ~= layout then
  return redis.error_reply('EXACTLY_LAYOUT ' .. stored)
end
local out = {}
local touched = {}
local rec = 1
for i = 8, #ARGV, 3 do
  local sub, field, value = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local found = false
  -- Older slots first; the current slot last, where HSETNX looks and claims in one call
  -- (each redis.call costs microseconds: a new id costs `n` calls, not n + 1).
  for s = cur - 1, cur - n + 1, -1 do
    found = redis.call('HGET', prefix .. s .. ':' .. sub, field)
    if found then break end
  end
  if not found then
    local key = prefix .. cur .. ':' .. sub
    if not claim then
      found = redis.call('HGET', key, field)
    elseif redis.call('HSETNX', key, field, value) == 0 then
      found = redis.call('HGET', key, field)
    elseif not touched[key] then
      touched[key] = true
      redis.call('PEXPIREAT', key, expire_at)
    end
  end
  if found and string.sub(found, 1, olen) ~= string.sub(value, 1, olen) then
    out[#out + 1] = rec
    out[#out + 1] = found
  end
  rec = rec + 1
end
-- The mark outlives the newest claim: renewed whenever a bucket's expiry is.
if claim and (not stored or next(touched) ~= nil) then
  redis.call('SET', mark, layout)
  redis.call('PEXPIREAT', mark, expire_at)
end
return out
)lua";

}  // namespace exactly::dedupe::redis
