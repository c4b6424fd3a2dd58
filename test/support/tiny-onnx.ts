// A tiny cross-encoder for the local model judge's tests, written from scratch: an ONNX model (the protobuf encoded
// here by hand, field numbers from onnx.proto) and a WordPiece tokenizer in Hugging Face's tokenizer.json format.
// The graph is an NLI classifier in miniature: token and token-type embeddings (Gather), a mean over the tokens the
// attention mask keeps, a linear layer to three classes (entailment, neutral, contradiction). Its weights are
// seeded pseudo-random and small, with a bias towards entailment, except that the token `refuted` pulls hard towards
// contradiction and `unclear` towards neutral: enough to see each state through the whole path, with no claim to
// accuracy. The mask makes padding change nothing, so a pair scores the same alone or in any batch.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// Protocol buffers, the few wire forms ONNX needs: varints (tags, ints, enums) and length-delimited fields.
function varint(n: number | bigint): number[] {
  let v = BigInt(n);
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return out;
}
const tag = (field: number, wire: 0 | 2) => varint((field << 3) | wire);
const int = (field: number, n: number | bigint) => [...tag(field, 0), ...varint(n)];
const bytes = (field: number, b: Uint8Array | number[]) => [...tag(field, 2), ...varint(b.length), ...b];
const str = (field: number, s: string) => bytes(field, [...Buffer.from(s, 'utf8')]);
const msg = (field: number, parts: number[][]) => bytes(field, parts.flat());

const FLOAT = 1;
const INT64 = 7;

function tensor(field: number, name: string, dims: number[], type: number, data: Float32Array | BigInt64Array) {
  return msg(field, [
    ...dims.map((d) => int(1, d)),
    int(2, type),
    str(8, name),
    bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength)),
  ]);
}

function valueInfo(field: number, name: string, type: number, dims: (number | string)[]) {
  const dim = dims.map((d) => msg(1, [typeof d === 'number' ? int(1, d) : str(2, d)]));
  return msg(field, [str(1, name), msg(2, [msg(1, [int(1, type), msg(2, dim)])])]);
}

function node(op: string, inputs: string[], outputs: string[], attrs: number[][] = []) {
  return msg(1, [...inputs.map((i) => str(1, i)), ...outputs.map((o) => str(2, o)), str(4, op), ...attrs]);
}
const intAttr = (name: string, i: number) => msg(5, [str(1, name), int(3, i), int(20, 2)]);

/** Words of the tiny vocabulary, after the special tokens; single letters and `##` letters cover any other word. */
const words =
  'the a an of to in is are was be by for on with and or not no it its that this as at from after before than more less duplicate ids id stream streams keeps kept keep message messages minutes minute two hours default window passage claim refuted unclear supported'.split(
    ' ',
  );
const letters = 'abcdefghijklmnopqrstuvwxyz0123456789'.split('');

export interface TinyModel {
  dir: string;
  vocabSize: number;
  hidden: number;
}

/** A seeded generator (mulberry32): the same weights in every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Write model.onnx, tokenizer.json, tokenizer_config.json and config.json into `dir`. `maxTokens` is the tokenizer's
 * model_max_length; `outputs` changes the classifier's width (a model that answers another number of classes than
 * config.json names, for the error test).
 */
export async function writeTinyModel(
  dir: string,
  o: { maxTokens?: number; outputs?: number; layout?: 'flat' | 'hf' } = {},
): Promise<TinyModel> {
  await mkdir(join(dir, 'onnx'), { recursive: true });
  const special = ['[PAD]', '[UNK]', '[CLS]', '[SEP]'];
  const vocab: Record<string, number> = {};
  for (const t of [...special, ...words, ...letters, ...letters.map((l) => `##${l}`)])
    if (!(t in vocab)) vocab[t] = Object.keys(vocab).length;
  for (const p of ['.', ',', ':', ';', '(', ')', '-', "'", '"', '%']) vocab[p] = Object.keys(vocab).length;
  const vocabSize = Object.keys(vocab).length;
  const hidden = 4;
  const classes = o.outputs ?? 3;
  const random = seeded(45);
  const embedding = new Float32Array(vocabSize * hidden).map(() => (random() - 0.5) * 0.2);
  // Dimension 1 carries `refuted`, dimension 2 `unclear`: large enough to win a mean over a short pair.
  embedding[vocab.refuted! * hidden + 1] = 400;
  embedding[vocab.unclear! * hidden + 2] = 400;
  const typeEmbedding = new Float32Array(2 * hidden).map(() => (random() - 0.5) * 0.1);
  // Class 0 entailment, 1 neutral, 2 contradiction: dimension 1 -> contradiction, dimension 2 -> neutral.
  const weights = new Float32Array(hidden * classes).map(() => (random() - 0.5) * 0.2);
  if (classes === 3) {
    weights[1 * classes + 2] = 1;
    weights[2 * classes + 1] = 1;
  }
  const bias = new Float32Array(classes);
  bias[0] = 3;
  const graph = [
    node('Gather', ['embedding', 'input_ids'], ['tokens']),
    node('Gather', ['type_embedding', 'token_type_ids'], ['types']),
    node('Add', ['tokens', 'types'], ['embedded']),
    node('Cast', ['attention_mask'], ['mask'], [intAttr('to', FLOAT)]),
    node('Unsqueeze', ['mask', 'axis_2'], ['mask3']),
    node('Mul', ['embedded', 'mask3'], ['kept']),
    node('ReduceSum', ['kept', 'axis_1'], ['summed'], [intAttr('keepdims', 0)]),
    node('ReduceSum', ['mask', 'axis_1'], ['count'], [intAttr('keepdims', 1)]),
    node('Div', ['summed', 'count'], ['pooled']),
    node('MatMul', ['pooled', 'classifier'], ['scores']),
    node('Add', ['scores', 'bias'], ['logits']),
    str(2, 'tiny-nli'),
    tensor(5, 'embedding', [vocabSize, hidden], FLOAT, embedding),
    tensor(5, 'type_embedding', [2, hidden], FLOAT, typeEmbedding),
    tensor(5, 'classifier', [hidden, classes], FLOAT, weights),
    tensor(5, 'bias', [classes], FLOAT, bias),
    tensor(5, 'axis_1', [1], INT64, BigInt64Array.from([1n])),
    tensor(5, 'axis_2', [1], INT64, BigInt64Array.from([2n])),
    valueInfo(11, 'input_ids', INT64, ['batch', 'sequence']),
    valueInfo(11, 'attention_mask', INT64, ['batch', 'sequence']),
    valueInfo(11, 'token_type_ids', INT64, ['batch', 'sequence']),
    valueInfo(12, 'logits', FLOAT, ['batch', classes]),
  ];
  const model = [int(1, 8), str(2, 'assay-test'), msg(7, graph), msg(8, [str(1, ''), int(2, 13)])].flat();
  const modelPath = o.layout === 'hf' ? join(dir, 'onnx', 'model.onnx') : join(dir, 'model.onnx');
  await writeFile(modelPath, Uint8Array.from(model));

  const addedToken = (content: string) => ({
    id: vocab[content],
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  const sequence = (id: 'A' | 'B', typeId: number) => ({ Sequence: { id, type_id: typeId } });
  const specialToken = (id: string, typeId: number) => ({ SpecialToken: { id, type_id: typeId } });
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: special.map(addedToken),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [specialToken('[CLS]', 0), sequence('A', 0), specialToken('[SEP]', 0)],
      pair: [
        specialToken('[CLS]', 0),
        sequence('A', 0),
        specialToken('[SEP]', 0),
        sequence('B', 1),
        specialToken('[SEP]', 1),
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [vocab['[CLS]']], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [vocab['[SEP]']], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab,
    },
  };
  await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  await writeFile(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({
      tokenizer_class: 'BertTokenizer',
      do_lower_case: true,
      model_max_length: o.maxTokens ?? 128,
      pad_token: '[PAD]',
      unk_token: '[UNK]',
      cls_token: '[CLS]',
      sep_token: '[SEP]',
    }),
  );
  await writeFile(
    join(dir, 'config.json'),
    JSON.stringify({
      architectures: ['TinyForSequenceClassification'],
      id2label: { 0: 'entailment', 1: 'neutral', 2: 'contradiction' },
      label2id: { entailment: 0, neutral: 1, contradiction: 2 },
    }),
  );
  return { dir, vocabSize, hidden };
}
