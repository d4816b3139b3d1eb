import { limits } from '../limits.ts';
import { type SkillKind, skillKinds } from './skill-kinds.ts';
import { languageOf } from './text.ts';

/**
 * The built-in skill extraction (docs/skills.md "Extraction"): deterministic, no external
 * service. The text is cut into sentences; each kind of skill of domain/skill-kinds.ts collects
 * the sentences that show one of its words. A kind shown by two or more different words is a
 * candidate; when fewer than three kinds are, those shown by one word are added, so a short
 * service description still yields its skill. Every step is one pass over the text per word of
 * the table (no backtracking patterns), so the cost is linear in the text's length.
 */
export interface ExtractedSkill {
  key: string;
  name: string;
  description: string;
  category: string;
  tags: string[];
  evidence: string[];
  confidence: number;
}

interface Sentence {
  text: string;
  lower: string;
  /** The sentence's English words, space-separated with a space at each end, for phrase lookups. */
  spaced: string;
  words: Set<string>;
}

const sentenceBreak = /[.!?;。！？；\n\r•·|]+/;
const englishWord = /[a-z][a-z0-9+#]*/g;
const singleCandidatesMin = 3;

function sentencesOf(text: string): Sentence[] {
  return text
    .split(sentenceBreak)
    .map((piece) => piece.trim())
    .filter((piece) => piece.length > 1)
    .map((piece) => {
      const lower = piece.toLowerCase();
      const words = lower.match(englishWord) ?? [];
      return { text: piece, lower, spaced: ` ${words.join(' ')} `, words: new Set(words) };
    });
}

/** The word or phrase of an English entry that a sentence shows ("translat*" shows as "translation"), or null. */
function englishMatch(sentence: Sentence, entry: string): string | null {
  if (entry.includes(' ')) {
    const phrase = entry.endsWith('*') ? entry.slice(0, -1) : entry;
    return sentence.spaced.includes(entry.endsWith('*') ? ` ${phrase}` : ` ${phrase} `) ? phrase : null;
  }
  if (!entry.endsWith('*')) return sentence.words.has(entry) ? entry : null;
  const stem = entry.slice(0, -1);
  for (const word of sentence.words) if (word.startsWith(stem)) return word;
  return null;
}

/** The entries of one kind that a sentence shows, each with the word that showed it (as a tag reads it). */
function wordsShown(sentence: Sentence, kind: SkillKind): [entry: string, word: string][] {
  const shown: [string, string][] = [];
  for (const entry of kind.english) {
    const word = englishMatch(sentence, entry);
    if (word !== null) shown.push([entry, word]);
  }
  for (const entry of kind.chinese) if (sentence.lower.includes(entry)) shown.push([entry, entry]);
  return shown;
}

interface Finding {
  kind: SkillKind;
  order: number;
  /** Per entry of the kind: the first word that showed it, and in how many sentences. */
  words: Map<string, { word: string; count: number }>;
  evidence: string[];
}

function findingsOf(sentences: Sentence[]): Finding[] {
  const findings = new Map<string, Finding>();
  sentences.forEach((sentence) => {
    for (const kind of skillKinds) {
      const shown = wordsShown(sentence, kind);
      if (shown.length === 0) continue;
      let finding = findings.get(kind.key);
      if (!finding) {
        finding = { kind, order: findings.size, words: new Map(), evidence: [] };
        findings.set(kind.key, finding);
      }
      for (const [entry, word] of shown) {
        const seen = finding.words.get(entry);
        finding.words.set(entry, { word: seen?.word ?? word, count: (seen?.count ?? 0) + 1 });
      }
      if (finding.evidence.length < limits.skillEvidenceSentencesMax) finding.evidence.push(sentence.text.slice(0, limits.skillEvidenceLengthMax));
    }
  });
  return [...findings.values()];
}

/** Up to five tags, most shown first; a word that is the start of another ("logo", "logos") is one tag. */
function tagsOf(finding: Finding): string[] {
  const tags: string[] = [];
  for (const { word } of [...finding.words.values()].sort((left, right) => right.count - left.count)) {
    const tag = word.slice(0, limits.skillTagLengthMax);
    if (!tags.some((kept) => kept.startsWith(tag) || tag.startsWith(kept))) tags.push(tag);
    if (tags.length === 5) break;
  }
  return tags;
}

const confidenceOf = (finding: Finding) => Math.min(0.95, Math.round((0.3 + 0.15 * finding.words.size + 0.05 * finding.evidence.length) * 100) / 100);

export function extractSkills(text: string): { language: 'en' | 'zh'; skills: ExtractedSkill[] } {
  const language = languageOf(text);
  const findings = findingsOf(sentencesOf(text.slice(0, limits.skillExtractTextLengthMax)));
  const strong = findings.filter((finding) => finding.words.size >= 2);
  const weak = findings.filter((finding) => finding.words.size < 2).sort((left, right) => left.order - right.order);
  const chosen = [...strong, ...(strong.length < singleCandidatesMin ? weak.slice(0, singleCandidatesMin - strong.length) : [])]
    .sort((left, right) => right.words.size - left.words.size || right.evidence.length - left.evidence.length || left.order - right.order)
    .slice(0, limits.skillCandidatesPerExtractMax);
  const skills = chosen.map((finding) => ({
    key: finding.kind.key,
    name: finding.kind.name[language],
    description: finding.evidence.join(language === 'zh' ? '。' : '. ').slice(0, limits.skillDescriptionLengthMax),
    category: finding.kind.category,
    tags: tagsOf(finding),
    evidence: finding.evidence,
    confidence: confidenceOf(finding),
  }));
  return { language, skills };
}
