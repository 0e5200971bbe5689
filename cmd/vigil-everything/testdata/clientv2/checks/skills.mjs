// Skills (io.modelcontextprotocol/skills, SEP-2640) through the v2 client's
// own host side (SkillsClient): vigil-everything's sample skills are listed,
// each gets back as listed, and every file of every manifest reads back with
// the digest and size the manifest gives, computed here again over the
// bytes, and equal to the file embedded from ../skills; the unlisted dynamic
// skill is found by skills/get, its resources "dynamic". Both eras, both
// transports.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';

const SKILLS_DIR = new URL('../../skills/', import.meta.url);
const LISTED = ['skill://acme/billing/refunds/SKILL.md', 'skill://pdf-processing/SKILL.md'];
const DYNAMIC = 'skill://reports/daily/SKILL.md';

export default [
  {
    name: 'skills: list, get and read every file, digests and sizes matching the embedded files',
    run: async ({ client, step }) => {
      const skills = new SkillsClient(client);
      assert.ok(skills.supported, 'the server declares io.modelcontextprotocol/skills');
      assert.ok(skills.directoryRead, 'with directoryRead');
      const listed = await skills.list();
      assert.deepEqual(listed.skills.map((s) => s.uri).sort(), LISTED, 'the listed skills');
      let files = 0;
      for (const entry of listed.skills) {
        const got = await skills.get(entry.uri);
        assert.deepEqual(got.skill, entry, `skills/get ${entry.uri} gives the listed entry`);
        assert.ok(Array.isArray(entry.resources) && entry.resources.length > 0, `${entry.uri}: a manifest`);
        const root = entry.uri.slice('skill://'.length, -'SKILL.md'.length);
        for (const res of entry.resources) {
          const file = await skills.read(entry, res.uri);
          assert.ok(file.verified, `${res.uri}: size and digest checked by the client`);
          const digest = 'sha256:' + createHash('sha256').update(file.bytes).digest('hex');
          assert.equal(digest, res.digest, `${res.uri}: the digest of the bytes read`);
          assert.equal(file.bytes.length, res.size, `${res.uri}: the size`);
          const onDisk = await readFile(new URL(res.uri.slice('skill://'.length), SKILLS_DIR));
          assert.ok(Buffer.from(file.bytes).equals(onDisk), `${res.uri}: the embedded file's bytes`);
          assert.ok(res.uri.startsWith('skill://' + root), `${res.uri}: inside its skill`);
          files++;
        }
      }
      step(`skills: ${listed.skills.length} listed, ${files} files read and verified`);
    },
  },
  {
    name: 'skills: the unlisted dynamic skill',
    run: async ({ client, step }) => {
      const skills = new SkillsClient(client);
      const dynamic = await skills.get(DYNAMIC);
      assert.equal(dynamic.skill.resources, 'dynamic', 'the unlisted skill is dynamic');
      step(`skills: ${DYNAMIC} dynamic`);
    },
  },
];
