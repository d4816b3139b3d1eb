import { readFileSync } from 'node:fs';
import { extractSkills } from '../src/domain/skill-extraction.ts';
for (const f of ['test/fixtures/cv-en.txt', 'test/fixtures/cv-zh.txt']) {
  const r = extractSkills(readFileSync(f, 'utf8'));
  console.log(f, r.language);
  for (const s of r.skills) console.log(' ', s.category, '|', s.name, '|', s.tags.join(','), '|', s.confidence, '|', s.evidence.length);
}
