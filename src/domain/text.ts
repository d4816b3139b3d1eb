import { type Concept, glossary } from './glossary.ts';

/**
 * Text to terms for matching, the same way for every language: English words lower-cased and
 * lightly stemmed, Chinese as overlapping two-character pieces (Chinese has no spaces, and two
 * characters is the most common word length), and glossary concepts for words of either
 * language, which is where a Chinese demand meets an English capability. Pure, no I/O.
 */
const cjkRun = /[\u3400-\u9fff\uf900-\ufaff]+/g;
const latinWord = /[a-z0-9]+/g;

const englishStopWords = new Set(
  (
    'a an and or the of to for in on at by with from into via per is are be been being was were it its this that these those i we you he she they ' +
    'me my our your their us them as not no do does did done can could should would will shall may might must need needs want wants wanted looking ' +
    'please some any all each every more most other such only own same so than too very just also about up out over under again then once here there ' +
    'when where why how what which who whom if but because while after before between both few has have had having get got make made one two etc ' +
    'someone something anyone anything help like using use used based new good best high quality fast quick within less'
  ).split(' '),
);

/** Chinese two-character pieces that carry no subject matter in a listing or a request. */
const chineseStopPieces = new Set(
  (
    '需要 我们 我需 我想 想要 希望 一个 一份 一些 可以 能够 提供 进行 帮我 帮忙 请帮 以及 或者 并且 我的 你的 我们 他们 这个 那个 这些 ' +
    '要求 负责 服务 支持 用于 通过 根据 相关 内容 左右 以内 之内 以上 每次 每个 快速 专业 高质量 优质 我司 公司 尽快'
  ).split(' '),
);

/** A light English stemmer: enough to make plural, -ing and -ed forms meet, nothing clever. */
export function stem(word: string): string {
  if (word.length <= 3) return word;
  if (word.endsWith('ies') && word.length > 4) return `${word.slice(0, -3)}y`;
  if (word.endsWith('ing') && word.length > 5) return word.slice(0, -3);
  if (word.endsWith('ed') && word.length > 4) return word.slice(0, -2);
  if (word.endsWith('es') && /(?:ss|x|ch|sh)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us')) return word.slice(0, -1);
  return word;
}

/** Whether an English word belongs to a concept: short stems must match whole, long ones as a prefix. */
const englishMatches = (word: string, conceptStem: string) =>
  conceptStem.length <= 3 ? word === conceptStem || word === `${conceptStem}s` : word.startsWith(conceptStem);

export interface TextTerms {
  /** Stemmed English words (not stop words). */
  words: string[];
  /** The raw English words, for the database query (PostgreSQL stems them itself). */
  rawWords: string[];
  /** Two-character Chinese pieces, without those that carry no meaning. */
  pieces: string[];
  /** Glossary concepts found, each with the surface form that was found first. */
  concepts: Map<string, string>;
}

export function termsOf(text: string): TextTerms {
  const lower = text.toLowerCase();
  const rawWords = (lower.replace(cjkRun, ' ').match(latinWord) ?? []).filter((word) => !englishStopWords.has(word) && (word.length > 1 || /\d/.test(word)));
  const words = rawWords.map(stem);
  const pieces: string[] = [];
  const runs = lower.match(cjkRun) ?? [];
  for (const run of runs) {
    if (run.length === 1) continue;
    for (let index = 0; index < run.length - 1; index++) {
      const piece = run.slice(index, index + 2);
      if (!chineseStopPieces.has(piece)) pieces.push(piece);
    }
  }
  return { words, rawWords, pieces, concepts: conceptsOf(rawWords, runs) };
}

function conceptsOf(rawWords: string[], runs: string[]): Map<string, string> {
  const found = new Map<string, string>();
  for (const concept of glossary) {
    const english = rawWords.find((word) => concept.english.some((conceptStem) => englishMatches(word, conceptStem)));
    if (english) {
      found.set(concept.id, english);
      continue;
    }
    const chinese = concept.chinese.find((word) => runs.some((run) => run.includes(word)));
    if (chinese) found.set(concept.id, chinese);
  }
  return found;
}

export const conceptById: ReadonlyMap<string, Concept> = new Map(glossary.map((concept) => [concept.id, concept]));

/** 'zh' when the text is mostly Chinese characters, else 'en': explanations answer in it. */
export function languageOf(text: string): 'zh' | 'en' {
  const chinese = (text.match(cjkRun) ?? []).reduce((sum, run) => sum + run.length, 0);
  const english = (text.toLowerCase().match(/[a-z]+/g) ?? []).length;
  return chinese >= english ? 'zh' : 'en';
}

/** Two-character pieces of a Chinese word, as the database's search column stores them. */
export function piecesOfWord(word: string): string[] {
  if (word.length < 2) return [word];
  return Array.from({ length: word.length - 1 }, (_, index) => word.slice(index, index + 2));
}

/**
 * The text-search query (PostgreSQL to_tsquery syntax, English configuration) that finds
 * candidates for a text in the database: any of its words, its Chinese pieces, and every form
 * of its glossary concepts in both languages (long English stems as prefixes). Only letters and
 * digits reach the query, so no input can change its syntax. Empty when nothing is searchable.
 */
export function searchQueryOf(text: string, termsMax: number): string {
  const terms = termsOf(text);
  const atoms = new Set<string>();
  for (const concept of terms.concepts.keys()) {
    const entry = conceptById.get(concept)!;
    for (const english of entry.english) atoms.add(english.length <= 3 ? english : `${english}:*`);
    for (const chinese of entry.chinese) for (const piece of piecesOfWord(chinese)) atoms.add(piece);
  }
  // Concepts first: when a long text has more terms than the query may hold, they count most.
  for (const word of terms.rawWords) atoms.add(word);
  for (const piece of terms.pieces) atoms.add(piece);
  const safe = [...atoms].filter((atom) => /^[a-z0-9\u3400-\u9fff\uf900-\ufaff]+(?::\*)?$/.test(atom));
  return safe.slice(0, termsMax).join(' | ');
}
