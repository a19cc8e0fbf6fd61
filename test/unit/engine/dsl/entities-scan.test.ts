/**
 * Entity detectors, review defects: where a candidate starts and ends (card digit groups, IBAN
 * country length), what is not an address or a secret (code paths, identifiers, hashes), and
 * 1 MB adversarial inputs (every detector is a single linear pass; no timing is asserted here).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ENTITY_DETECTORS } from '../../../../src/engine/dsl/entities.js';
import { digits, ibanFor, withLuhn } from './helpers.js';

const D = ENTITY_DETECTORS;

const grouped = (s: string, sep = ' ') => s.match(/.{1,4}/g)!.join(sep);

describe('credit_card: candidates are whole digit groups', () => {
  it('finds a card next to other digit groups (CVV, expiry, reference numbers)', () => {
    for (const s of [
      '4111 1111 1111 1111 123',
      'Card 4111 1111 1111 1111 123',
      '4111111111111111 123',
      'ref 12 4111 1111 1111 1111',
      'Card 4111 1111 1111 1111 12 27',
      'Card 5555 5555 5555 4444 1234',
      '4111-1111-1111-1111 123',
      'amex 3782 822463 10005 1234',
      'no. 7 4111 1111 1111 1111 exp 12/27 cvv 123',
      '4111111111111111,5555555555554444',
      // separators of any kind (#20 audit): no-break, narrow no-break and thin spaces, Unicode hyphens, dots
      'card: 4111\u00a01111\u00a01111\u00a01111',
      '4111\u202f1111\u202f1111\u202f1111 exp 12/27',
      '4111\u20091111\u20091111\u20091111',
      '4111\u20111111\u20111111\u20111111',
      '4111\u20131111\u20131111\u20131111',
      '4111.1111.1111.1111',
      'card 4111.1111.1111.1111.',
      'amex 3782.822463.10005',
      '4111\u00a01111 1111\u00a01111', // a no-break space is a space: one kind
      '４１１１１１１１１１１１１１１１', // fullwidth digits (NFKC folds them to ASCII)
      'card ４１１１ １１１１ １１１１ １１１１',
      '４１１１．１１１１．１１１１．１１１１',
      'card 4111 １１１１ 1111 1111', // mixed widths
      // #20 review: invisible format characters (Cf) read as absent, digits of any script (Nd), `_` and `/`
      '4111\u200b1111\u200b1111\u200b1111', // zero-width space
      '4111\u00ad1111\u00ad1111\u00ad1111', // soft hyphen
      '41\u20601111111\ufeff1111111', // word joiner, BOM inside groups
      'card 4111\u200b 1111\u200b 1111\u200b 1111',
      '4111_1111_1111_1111',
      '4111/1111/1111/1111 exp 12/27',
      '\u0664\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661', // Arabic-Indic
      '𝟒𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏', // mathematical bold
      'card 𝟺𝟷𝟷𝟷 𝟷𝟷𝟷𝟷 𝟷𝟷𝟷𝟷 𝟷𝟷𝟷𝟷', // mathematical monospace
      '🤔 card 4111\u200b1111\u200b1111\u200b1111 🎉', // emoji around it
    ])
      expect(D.credit_card(s), s).toBe(true);
  });

  it('finds a card written in the decimal digits of any script (Unicode Nd)', () => {
    // Zero of the digit set: Arabic-Indic, Extended Arabic-Indic, N'Ko, Devanagari, Bengali, Thai, Tibetan, Myanmar,
    // fullwidth, mathematical bold / double-struck / monospace, Adlam, segmented.
    const zeros = [0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xe50, 0xf20, 0x1040, 0xff10, 0x1d7ce, 0x1d7d8, 0x1d7f6, 0x1e950, 0x1fbf0];
    for (const z of zeros) {
      const to = (s: string) => [...s].map((d) => (d >= '0' && d <= '9' ? String.fromCodePoint(z + Number(d)) : d)).join('');
      expect(D.credit_card(to('5555 5555 5555 4444')), z.toString(16)).toBe(true);
      expect(D.ssn(to('219-09-9998')), z.toString(16)).toBe(true);
      expect(D.credit_card(to('5555 5555 5555 4445')), z.toString(16)).toBe(false); // Luhn fails
    }
  });

  it('reads default-ignorable characters that are not Cf (variation selectors, fillers) as absent, too', () => {
    // #20 review: U+FE0F, U+FE00, U+E0100 variation selectors, U+034F combining grapheme joiner, U+180B Mongolian
    // FVS, U+17B4 Khmer inherent vowel, U+115F and U+3164 Hangul fillers
    for (const x of ['\ufe0f', '\ufe00', '\u{e0100}', '\u{e01ef}', '\u034f', '\u180b', '\u17b4', '\u115f', '\u3164']) {
      const esc = x.codePointAt(0)!.toString(16);
      expect(D.credit_card(`4111${x}1111${x}1111${x}1111`), esc).toBe(true);
      expect(D.credit_card(`card 5555${x} 5555${x} 5555${x} 4444`), esc).toBe(true);
      expect(D.ssn(`SSN: 219${x}09${x}9998`), esc).toBe(true);
      expect(D.ssn(`219${x}-09${x}-9998`), esc).toBe(true);
      expect(D.credit_card(`4111${x}1111${x}1111${x}1112`), esc).toBe(false); // Luhn fails
      expect(D.ssn(`order 219${x}09${x}9998`), esc).toBe(false); // reads as 219099998: unlabelled
    }
    // Keycap and emoji presentation sequences keep their digits apart.
    for (const s of ['1\ufe0f\u20e3 2\ufe0f\u20e3 3\ufe0f\u20e3 4\ufe0f\u20e3', '☎\ufe0f 1234 5678 ❤\ufe0f 9012 3456'])
      expect(D.credit_card(s), s).toBe(false);
  });

  it('dates, paths and ids with `_` or `/` stay negative; so do non-cards behind format characters', () => {
    for (const s of [
      '2024/01/15',
      'on 2024/01/15 at 12:30, card exp 12/27',
      '2024_01_15_1234_5678',
      'order_2024_0115_0001',
      'GET /api/v1/users/1234/orders/5678/items/9012',
      'ORD_1234_5678_9012_3456', // Luhn-valid with another issuer prefix: still an id
      '4111_1111_1111_1112', // Luhn fails
      '4111_1111/1111_1111', // mixed separators
      '2019/2020/2021/2022',
      '1/2/3/4/5/6/7/8/9/0/1/2/3/4/5/6',
      '4111\u200b1111\u200b1111\u200b1112',
      '\u0661\u0662\u0663\u0664 \u0665\u0666\u0667\u0668', // 8 Arabic-Indic digits
      '🤔 1234 5678 🎉 9012 3456',
    ])
      expect(D.credit_card(s), s).toBe(false);
  });

  it('finds generated cards with random digit groups before or after them (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('4', '51', '55', '2221', '6011'),
        digits(14),
        fc.constantFrom('', ' ', '-', '.', '\u00a0', '\u202f'),
        fc.array(fc.integer({ min: 1, max: 6 }).chain(digits), { maxLength: 3 }),
        fc.boolean(),
        (prefix, rest, sep, others, after) => {
          const n = withLuhn((prefix + rest).slice(0, 15));
          const card = sep ? grouped(n, sep) : n;
          const text = (after ? [card, ...others] : [...others, card]).join(' ');
          expect(D.credit_card(text), text).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never splits a digit run, cuts a group or takes the middle of a chain, so long numbers are not searched for a valid slice', () => {
    const card = '4111111111111111';
    for (const s of [
      `order ${card}7`, // 17 digits: the first 16 are a valid Visa
      `id 9${card}`,
      `tracking ${card}0000`,
      `${card}${card}`,
      '4111 1111 1111 11110', // last group longer than the card needs
      '94111 1111 1111 1111',
      '41 11 11 11 11 11 11 11', // cards are printed in groups of 3-6 digits
      '4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1',
      '4111 1111-1111 1111', // mixed separators
      '4111 1111.1111 1111',
      '4111.1111\u00a01111-1111',
      'ratio 0.4111111111111111', // the fraction of a decimal number
      'ratio 12.4111111111111111',
      'pi 3.14159265358979 and 4111.1111', // a decimal's dot joins two groups: 12 digits at most
      'total 4.111.111.111.111.111', // thousands separators after a 1-2 digit group start no chain
      'amount 411.111.111.111.111', // 3-digit groups: 15 digits, not a Visa length
      'ip 192.168.100.200 v4111.1111.1111',
      '4111\u00a01111\u00a01111\u00a01112', // Luhn still decides
      '４１１１ １１１１ １１１１ １１１２',
      '０.４１１１１１１１１１１１１１１１',
      'ts 1700000000123 4111',
      'call +1 415 555 2671 or +44 20 7946 0958',
      'epoch 1717171717 order 5555 5555 5555',
      // inside a longer chain of number groups (a table row): only windows at either end count
      '1234 4111 1111 1111 1111 5678',
    ])
      expect(D.credit_card(s), s).toBe(false);
  });

  it('a run or chain with no valid candidate stays negative whatever surrounds it (property)', () => {
    // Digits glued to a valid card make a longer run; a run is never split.
    fc.assert(
      fc.property(digits(15), digits(2), (body, extra) => {
        const n = withLuhn('4' + body.slice(0, 14));
        expect(D.credit_card(`x ${n}${extra} y`)).toBe(false);
        expect(D.credit_card(`x ${extra}${n} y`)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
});

describe('ssn: separated forms of any separator kind, bare 9 digits only after a label', () => {
  it('finds SSNs with dashes, spaces of any kind or dots, and labelled 9-digit runs', () => {
    for (const s of [
      '219-09-9998',
      'SSN 219 09 9998',
      '219\u00a009\u00a09998',
      '219\u202f09\u202f9998',
      '219.09.9998',
      '219\u201309\u20139998',
      'SSN: 219099998',
      'My SSN is 219099998.',
      'ssn=219099998',
      'user_ssn: "219099998"',
      'SSN#219099998',
      'Social Security Number: 219099998',
      'social security no. 219099998',
      'SSN:\n219099998',
      '２１９-０９-９９９８', // fullwidth digits
      'ＳＳＮ：２１９０９９９９８', // fullwidth label and digits
      'SSN: ２１９０９９９９８',
      'ssn#219099998',
      'SSN (219099998)',
      'SSN no 219099998',
      'SSN nr. 219099998',
      'Social Security Number is 219099998',
      'ssn_number = 219099998',
      'SSN \u2013 219099998', // en dash
      'ＳＳＮ：　２１９０９９９９８', // ideographic space
      'Social Security Number (SSN): 219099998',
      'SSN*: 219099998',
      'SSN/TIN: 219099998',
      'SSN or ITIN: 219099998',
      // #20 review: any decimal digits, format characters read as absent
      'SSN: \u0662\u0661\u0669\u0660\u0669\u0669\u0669\u0669\u0668', // Arabic-Indic
      '\u0662\u0661\u0669-\u0660\u0669-\u0669\u0669\u0669\u0668',
      '𝟐𝟏𝟗-𝟎𝟗-𝟗𝟗𝟗𝟖',
      'SSN\u200b: 219\u200b09\u200b9998',
      '219\u00ad-09\u00ad-9998',
      'S\u200bS\u200bN: 219099998',
    ])
      expect(D.ssn(s), s).toBe(true);
  });

  it('an unlabelled 9-digit number, a label in another sentence, invalid or sample numbers are not SSNs', () => {
    for (const s of [
      '219099998',
      'order 219099998 shipped',
      'Do not share your SSN. Order 219099998 shipped.',
      'Never send an SSN! Ticket 219099998',
      'SSN lookup for order 4 219099998', // a digit between label and number
      'SSNs are private, invoice 219099998', // "ssns" is not the label
      'classn 219099998',
      'SSN: 000099998 or 666099998 or 900099998', // area 000, 666, 9xx
      'SSN: 219009998 or 219090000', // group 00, serial 0000
      'SSN: 123456789', // published sample
      'SSN: 2190999981', // 10 digits
      'SSN: 21909999', // 8 digits
      'SSN: 219099998-1',
      'SSN 219-09-99981',
      '219 09-9998', // mixed separators
      '219.09.9998.1', // a longer dotted chain
      '1.219.09.9998',
      'x-219-09-9998',
      'SSN: ' + 'x'.repeat(40) + ' 219099998', // the label is too far away
      'order ２１９０９９９９８',
      'ＳＳＮ: ０００-０９-９９９８',
      // #20 review: other words, a dash of prose or a line break between label and number (support text)
      'No SSN is needed for order 412345678',
      'We never ask for your SSN, and your order number is 412345678',
      "Please don't include your SSN in chat \u2014 reference 219099998",
      'SSN verification failed\nTicket: 219099998',
      'SSN not needed - invoice 219099998',
      'SSN\n219099998', // a line break without a colon
      'ＳＳＮ不要。注文２１９０９９９９８', // a CJK full stop ends the sentence
      'SSN (see above) 219099998',
      'We never ask for your SSN, 412345678 is your order',
      'SSN or order 412345678',
      // #20 review: a dash chain is one with Unicode hyphens, en dash or minus sign too
      'ORD-2024-219-09-9998',
      ...['\u2010', '\u2011', '\u2012', '\u2013', '\u2212'].flatMap((d) => [
        ['ORD', '2024', '219', '09', '9998'].join(d),
        ['219', '09', '9998', '1'].join(d),
        'SSN: ' + d + '219099998',
        'SSN: 219099998' + d + '1',
      ]),
      'ref 219\uff0e09\uff0e9998\uff0e1', // fullwidth full stops: a longer dotted chain
      'order \u0662\u0661\u0669\u0660\u0669\u0669\u0669\u0669\u0668', // unlabelled, Arabic-Indic
      '219\u200b09\u200b9998', // reads as 219099998: unlabelled
      '219/09/9998',
      '219_09_9998',
      '🤔 219099998',
    ])
      expect(D.ssn(s), s).toBe(false);
  });
});

describe('secret: passwords in URLs', () => {
  it('finds a password in the userinfo of any scheme', () => {
    for (const s of [
      'postgres://user:s3cretpw@db.example.com/x',
      'DATABASE_URL=postgres://user:pa55word@host:5432/db',
      'mysql://root:hunter2@10.0.0.5/app',
      'redis://:Xa9fK2mQ@cache:6379/0',
      'mongodb+srv://app:p%40ss@cluster0.mongodb.net/?retryWrites=true',
      'amqp://guest:Gu3st-2024@rabbit',
      'postgres://app:Xk9#mP2vL8q@db.internal',
      'postgres://user:P@ss#w0rd!@host',
      'postgres://app:12ab#cd@db', // digits then a letter before the '#': a password, not a port
      'postgres://postgres:postgres1@db.internal/app', // not the user name
      'mysql://admin:rootroot@db/app', // not a listed word
      'clone https://bob:tok3n@git.example.com/repo.git',
      'jdbc:postgresql://admin:pw@[2001:db8::1]:5432/app',
    ])
      expect(D.secret(s), s).toBe(true);
  });

  it('a URL without a password, or with a placeholder or mask, is not a secret', () => {
    for (const s of [
      'postgres://user@db.example.com/x',
      'postgres://user:@db/x',
      'postgres://user:<password>@host/db',
      'postgres://user:${DB_PASSWORD}@host/db',
      'postgres://user:$PGPASSWORD@host/db',
      'postgres://{{ user }}:{{ password }}@host/db',
      'postgres://user:%DB_PASS%@host/db',
      'postgres://user:****@host/db',
      'postgres://user:xxxx@host/db',
      'https://example.com:8443/path?a=b:c@d',
      'see http://a.b/c:d@e',
      'http://[::1]:8080/',
      'git@github.com:org/repo.git',
      'ssh://git@github.com/org/repo',
      'std::vector<int> v; a://b:c', // no '@'
      'ftp://user:pass@ nothing', // no host after '@'
      // #20 review: demo credentials of tutorials and local setups (these two were positives before)
      'DATABASE_URL=postgres://user:pass@host:5432/db',
      'amqp://guest:guest@rabbit',
      'Use the format postgres://user:password@localhost:5432/mydb',
      'docker run -e DATABASE_URL=postgres://postgres:postgres@localhost:5432/postgres',
      'mysql://root:root@localhost/test',
      'https://username:password@example.com',
      'redis://default:changeme@redis:6379',
      'mongodb://admin:Admin@mongo:27017', // the user name again, any case
      'postgres://app:secret@db/app',
      'postgres://app:TEST@db/app',
      'mysql://u:your_password@db/app',
      'see https://example.com#a:b@c', // a fragment before the colon
      // #20 review: a fragment after a port (a '#' after the colon with only digits between) ends the URL
      'http://localhost:3000#access_token=eyJhbGciOiJIUzI1NiJ9.e30.abc&email=jane@example.com',
      'http://localhost:8080#contact@team',
      'https://example.com:443#anchor@x',
      'http://127.0.0.1:5173#token@x',
      // the same after an [IPv6] address: its colons are not the userinfo's
      'http://[::1]:8080#contact@team',
      'http://[2001:db8::1]:8080#token@x',
    ])
      expect(D.secret(s), s).toBe(false);
    // Digits then '#' after a user name (no dot, not localhost) are a password, not a port (review of 2d820d8).
    // Nor after a dotted user name in a database URL (no fragments there), while a dotless web host's port is a port.
    for (const s of ['postgres://app:2024#Xk9mP2vL8q@db.internal', 'postgres://app:1#Xk9mP2vL8qZ@db.internal', 'postgres://john.doe:2024#Spring!x@db.internal']) expect(D.secret(s), s).toBe(true);
    for (const s of ['http://myhost:8080#contact@team', 'HTTPS://db:5432#frag@x']) expect(D.secret(s), s).toBe(false);
  });
});

describe('bank_account: IBAN cut at the country length', () => {
  it('finds IBANs followed by a word (lengths that are a multiple of 4)', () => {
    for (const s of [
      'Pay to ES91 2100 0418 4502 0005 1332 please',
      'ES9121000418450200051332 today',
      'BE68 5390 0754 7034 Bank',
      'AT61 1904 3002 3457 3201 thanks',
      'Send to AT611904300234573201, ref',
      'NO93 8601 1117 947 ok',
      'DE89 3704 0044 0532 0130 00 1234',
      'iban: gb82 west 1234 5698 7654 32 ok',
    ])
      expect(D.bank_account(s), s).toBe(true);
  });

  it('finds generated IBANs of several countries, spaced or not, before a word (property)', () => {
    const lengths: Record<string, number> = { ES: 24, BE: 16, AT: 20, DE: 22, FR: 27, NO: 15, PL: 28, MT: 31, LC: 32, RU: 33 };
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(lengths)), digits(30), fc.boolean(), fc.constantFrom('please', 'Bank', 'X1', 'thanks.'), (cc, d, spaced, word) => {
        const iban = ibanFor(cc, d.slice(0, lengths[cc]! - 4));
        const text = `to ${spaced ? grouped(iban) : iban} ${word}`;
        expect(D.bank_account(text), text).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('rejects bad checksums, wrong lengths, glued text and unregistered countries', () => {
    for (const s of [
      'Pay to ES91 2100 0418 4502 0005 1333 please',
      'ES9121000418450200051332today',
      'DE89 3704 0044 0532 0130 0 thanks', // 21 characters for a 22-character country
      'XX82 WEST 1234 5698 7654 32', // not in the IBAN registry
      `code ${ibanFor('ZZ', '123456789012345678')} here`,
    ])
      expect(D.bank_account(s), s).toBe(false);
  });
});

describe('ip_address: IPv6 only in address form', () => {
  it('does not read code paths, scopes or slices as addresses', () => {
    for (const s of [
      'std::vector<int> v;',
      'let v = Vec::new();',
      'Foo::Bar::baz()',
      'use std::collections::HashMap;',
      'a::b',
      'ns::cc',
      'Face::Bead',
      'dead::beef',
      'x = a[1::2] + a[::2] + a[::-1]',
      'Haskell x :: Int',
      'mac 00:1a:2b:3c:4d:5e',
      'meeting at 12:30:45',
      'listening on [::1]:8080', // loopback: decided not counted (see docs/dsl.md)
      '::',
    ])
      expect(D.ip_address(s), s).toBe(false);
  });

  it('finds IPv6 addresses in their RFC 4291 text forms', () => {
    for (const s of [
      'fe80::1',
      'v6 2001:db8::ff00:42:8329',
      'host 2001:0db8:0000:0000:0000:ff00:0042:8329.',
      'http://[2001:db8::1]:8080/',
      'IPv6:fe80::1',
      'addr=fe80::1%eth0',
      'mapped ::ffff:192.0.2.1',
      'link fe80::1: up',
      '1:2:3:4:5:6:7:8',
      'nat64 64:ff9b::c000:221',
    ])
      expect(D.ip_address(s), s).toBe(true);
  });
});

describe('secret: generic keys are random, not word-like', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');

  it('does not flag identifiers, hashes in git contexts, UUIDs or base64 text', () => {
    for (const s of [
      'S3BucketPolicyForProductionEnv2024',
      'ThisIsAVeryLongCamelCaseIdentifierName123',
      'AbstractSingletonProxyFactoryBean2',
      'handleUserProfileUpdateRequestV2Async',
      'testParseIso8601DurationWith3Units',
      'InternalFrameTitlePaneMaximizeButton2WindowNotFocusedState',
      'getHTTPResponseCode404AndRetryOnce',
      'XMLHttpRequest2EventTargetUploadHandler',
      'commit 3f786850e387550fdab836ed7e6dc881de23001b',
      'git rev-parse HEAD\n3f786850e387550fdab836ed7e6dc881de23001b',
      'sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
      'request id 550e8400-e29b-41d4-a716-446655440000',
      b64('password'),
      b64('hello world'),
      b64('steward admin'),
      'aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgZW5jb2RlZCB0ZXh0IDEyMw==',
      b64('please review the 3 failing tests in CI'),
    ])
      expect(D.secret(s), s).toBe(false);
  });

  it('keeps finding vendor tokens, private keys and random keys', () => {
    for (const s of [
      'aws AKIAIOSFODNN7EXAMPLE',
      'token ghp_abcdefghijklmnopqrstuvwxyz0123456789',
      'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ',
      '-----BEGIN RSA PRIVATE KEY-----\nMIIE...',
      '-----BEGIN OPENSSH PRIVATE KEY-----',
      'xoxb-123456789012-abcdef',
      'sk_live_' + 'a1B2'.repeat(6),
      'api_key=Xk9pQ2rT7vLmN4sB8wYz3HjD6fGa1cE5',
      'sk-proj-Ab3dEf9hIjK1mN0pQr5tUv7wXyZ2',
      'jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      // hex keys count when assigned to a credential name
      'api_key=3f786850e387550fdab836ed7e6dc881de23001b',
      '"client_secret": "9f86d081884c7d659a2feaa0c55ad015"',
      'X-Api-Key: 550e8400-e29b-41d4-a716-446655440000',
      'Authorization: Bearer 3f786850e387550fdab836ed7e6dc881de23001b',
    ])
      expect(D.secret(s), s).toBe(true);
  });

  it('flags random base62 keys of 32-40 characters (measured) and random hex keys with a credential name', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    const keys = fc.sample(fc.array(fc.constantFrom(...alphabet), { minLength: 32, maxLength: 40 }).map((a) => a.join('')), { numRuns: 1000, seed: 11 });
    expect(keys.filter((k) => D.secret(`key ${k}`)).length / keys.length).toBeGreaterThan(0.95);
    const hex = fc.sample(fc.array(fc.constantFrom(...'0123456789abcdef'), { minLength: 32, maxLength: 64 }).map((a) => a.join('')), { numRuns: 300, seed: 12 });
    for (const h of hex) {
      expect(D.secret(`API_TOKEN=${h}`)).toBe(true);
      expect(D.secret(`commit ${h}`)).toBe(false);
    }
  });
});

describe('every detector on 1 MB adversarial inputs', () => {
  // Completion is the assertion: each was superlinear somewhere (email: 64 steps per start and
  // label backtracking; JWT: every "eyJ" after a dash rescanned the rest of the run).
  const MB = 1_000_000;
  const rep = (unit: string) => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
  const inputs: Record<string, string> = {
    letters: rep('a'),
    digits: rep('4'),
    digitsSpaced: rep('4 '),
    cardGroups: rep('4111 '),
    cardGroups3: rep('411 '),
    dashes: rep('1-'),
    dots: rep('1.'),
    colons: rep('a:'),
    doubleColons: rep('::'),
    hexColons: rep('fe80::'),
    ats: rep('a@'),
    emails: rep('a@a.a'),
    localParts: rep('a'.repeat(63) + '@'),
    domainDashes: 'a@' + rep('a-'),
    domainDots: 'x@' + rep('a.'),
    longLabels: rep('a@' + 'a'.repeat(70) + '.'),
    ibanGroups: 'GB82 ' + rep('WEST '),
    ibanPrefixes: rep('DE89 '),
    aba: rep('021000021 '),
    phones: rep('(212) '),
    jwtDashes: rep('eyJ-'),
    jwtSegments: rep('eyJaaaaaaaaaaaa.'),
    pemWords: '-----BEGIN ' + rep('A '),
    stripe: 'sk_live_' + rep('a'),
    tokens: rep('aB3x'),
    tokens25: rep('aB3xK9mQ2zL7pR4tV8wY1cN6 '),
    words: rep('hello world '),
    dottedGroups: rep('4111.'),
    nbspGroups: rep('4111\u00a0'),
    ssnLabels: rep('SSN: 12345678 '),
    ssnNines: rep('SSN 000000000 '),
    schemes: rep('a://'),
    userinfos: rep('ab://u:p'),
    longUserinfo: 'db://' + rep('u:p'),
    wideDigits: rep('４'),
    wideGroups: rep('４１１１ '),
    wideNines: rep('ssn ２１９０９９９９８x '),
    arabicDigits: rep('\u0664'),
    arabicGroups: rep('\u0664\u0661\u0661\u0661 '),
    mathDigits: rep('𝟒'),
    zwspGroups: rep('4111\u200b'),
    softHyphens: rep('4\u00ad'),
    formatOnly: rep('\u200b'),
    slashGroups: rep('4111/'),
    underscoreGroups: rep('4111_'),
    emoji: rep('🤔 1234 '),
    cjk: rep('注文番号は'),
  };
  for (const [name, text] of Object.entries(inputs)) {
    it(name, () => {
      for (const detect of Object.values(D)) expect(typeof detect(text)).toBe('boolean');
    });
  }
  it('answers correctly at the end of 1 MB of near misses', () => {
    expect(D.email(rep('a@') + ' jane@example.org')).toBe(true);
    expect(D.email(rep('a@a') + ' x')).toBe(false);
    expect(D.credit_card(rep('1111 ') + ' 4111 1111 1111 1111')).toBe(true);
    expect(D.secret(rep('eyJ-') + ' AKIAIOSFODNN7EXAMPLE')).toBe(true);
    expect(D.ip_address(rep('a:') + ' fe80::1')).toBe(true);
    expect(D.bank_account(rep('DE89 ') + ' ES91 2100 0418 4502 0005 1332 ok')).toBe(true);
    expect(D.credit_card(rep('4111.') + ' card 4111.1111.1111.1111')).toBe(true);
    expect(D.ssn(rep('SSN: 12345678 ') + ' SSN: 219099998')).toBe(true);
    expect(D.secret(rep('ab://u:p') + ' postgres://u:s3cret@db/x')).toBe(true);
    expect(D.credit_card(rep('\u0664\u0661\u0661\u0661 ') + ' 4111\u200b1111\u200b1111\u200b1111')).toBe(true);
    expect(D.ssn(rep('🤔 1234 ') + ' SSN: \u0662\u0661\u0669\u0660\u0669\u0669\u0669\u0669\u0668')).toBe(true);
  });
});
