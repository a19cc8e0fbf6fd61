import { describe, expect, it } from 'vitest';
import { hashTagOf, keySlot, slotTag, SLOTS } from '../../../../src/adapters/redis/slots.js';
import { parseClusterNodes } from '../../../../src/adapters/redis/client.js';
import { namespaceTag } from '../../../../src/adapters/redis/state-store.js';

describe('Redis Cluster slots', () => {
  it('keySlot is Redis\' CRC-16/XMODEM mod 16384 (values from the cluster spec and CLUSTER KEYSLOT)', () => {
    expect(keySlot('123456789')).toBe(0x31c3 % SLOTS);
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('{user1000}.following')).toBe(keySlot('user1000'));
    expect(keySlot('{user1000}.followers')).toBe(keySlot('{user1000}.following'));
  });

  it('hash tags follow Redis\' rule: first { to the next }, not empty', () => {
    expect(hashTagOf('a{b}c{d}')).toBe('b');
    expect(hashTagOf('a{}b{c}')).toBe('a{}b{c}');
    expect(hashTagOf('a{b')).toBe('a{b');
    expect(hashTagOf('plain')).toBe('plain');
  });

  it('slotTag(s) hashes to s for every slot', () => {
    for (let s = 0; s < SLOTS; s++) if (keySlot(`x:{${slotTag(s)}}`) !== s) throw new Error(`slot ${s}`);
    expect(slotTag(0).length).toBeLessThanOrEqual(4);
  });

  it('an agent\'s rate windows carry the tag of its trust-debt hash (same slot)', () => {
    expect(namespaceTag('acme:bot-1')).toBe('acme:bot-1');
    // the engine escapes % and : in each part; the trust-debt store URI-encodes each part
    expect(namespaceTag('a%3Ab:c%25d')).toBe(`${encodeURIComponent('a:b')}:${encodeURIComponent('c%d')}`);
    expect(namespaceTag('t:{x}')).toBe(`t:${encodeURIComponent('{x}')}`);
    expect(namespaceTag('one-part')).toBe('one-part');
  });

  it('cluster seed nodes parse as host:port', () => {
    expect(parseClusterNodes(['127.0.0.1:17001', ' redis://h:2 ', ''])).toEqual([
      { host: '127.0.0.1', port: 17001 },
      { host: 'h', port: 2 },
    ]);
    expect(() => parseClusterNodes(['h:x'])).toThrow(/host:port/);
  });
});
