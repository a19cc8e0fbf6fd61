/**
 * Parsed form of a condition (parse → compile → evaluate). Offsets are 0-based inside the string
 * expression the node came from; `path` locates that string inside a YAML-structured condition
 * ("" for a plain string condition, "all[2].any[0]" for a nested item).
 */
import type { StewardErrorCode } from '../../errors.js';

export type CompareOp = '>' | '>=' | '<' | '<=' | '==' | '!=' | 'contains' | 'matches';

export type LiteralValue = string | number | boolean | LiteralValue[];

interface NodeBase {
  path: string;
  offset: number;
}

export interface LiteralNode extends NodeBase {
  kind: 'literal';
  value: LiteralValue;
  /** Set for `10MB` (bytes) and `1m` (milliseconds) literals, and for "1m" strings once known to be a duration. */
  unit?: 'size' | 'duration';
}

export interface FieldNode extends NodeBase {
  kind: 'field';
  /** Pre-split path; numbers are array indexes (`sources[0].id`). */
  segments: (string | number)[];
  text: string;
}

export interface CallNode extends NodeBase {
  kind: 'call';
  name: string;
  args: Node[];
}

export interface CompareNode extends NodeBase {
  kind: 'compare';
  op: CompareOp;
  left: Node;
  right: Node;
  /** Offset of the operator token, for type errors. */
  opOffset: number;
}

export interface NotNode extends NodeBase {
  kind: 'not';
  operand: Node;
}

export interface LogicalNode extends NodeBase {
  kind: 'all' | 'any';
  items: Node[];
}

export type Node = LiteralNode | FieldNode | CallNode | CompareNode | NotNode | LogicalNode;

export interface DslProblem {
  code: StewardErrorCode;
  message: string;
  /** Location of the string expression inside a structured condition, e.g. "all[2].any[0]"; "" at the top. */
  path: string;
  /** 0-based offset inside that string expression. */
  offset?: number;
}

export interface DslLimits {
  /** Maximum characters of one string expression. */
  maxLength: number;
  /** Maximum nesting depth (structured levels and parenthesised/negated sub-expressions together). */
  maxDepth: number;
  /** Maximum AST nodes in one condition. */
  maxNodes: number;
}

export const DEFAULT_DSL_LIMITS: DslLimits = { maxLength: 4096, maxDepth: 32, maxNodes: 1024 };
