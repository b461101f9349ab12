// Turns output lines into JSON values: one value per line (JSONL, claude's single-line json), or a
// pretty-printed document spanning lines (gemini's --output-format json). Anything that does not parse is
// handed back as plain text; nothing here throws.

export interface JsonLineParser {
  line(text: string): void;
  /** Flushes a document still open at end of output (parsed if complete, else returned as text). */
  end(): void;
}

export interface JsonLineHandlers {
  onValue(value: unknown): void;
  onText(line: string): void;
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

export function createJsonLineParser(handlers: JsonLineHandlers, maxDocumentChars: number): JsonLineParser {
  let document: string[] | undefined;
  let documentChars = 0;

  const abandonDocument = (): void => {
    const lines = document ?? [];
    document = undefined;
    documentChars = 0;
    for (const l of lines) handlers.onText(l);
  };

  return {
    line(text: string): void {
      if (document) {
        documentChars += text.length + 1;
        if (documentChars > maxDocumentChars) {
          // Too big to hold: forget it (the raw tail still has its end for text analysis).
          document = undefined;
          documentChars = 0;
          return;
        }
        document.push(text);
        // A pretty-printer closes the top-level value at column 0; only then is a parse worth trying.
        const closer = text.trimEnd();
        if (closer === '}' || closer === ']') {
          const parsed = tryParse(document.join('\n'));
          if (parsed.ok) {
            document = undefined;
            documentChars = 0;
            handlers.onValue(parsed.value);
          }
        }
        return;
      }
      const trimmed = text.trim();
      const first = trimmed[0];
      if (first !== '{' && first !== '[') {
        handlers.onText(text);
        return;
      }
      if (trimmed === '{' || trimmed === '[') {
        document = [text];
        documentChars = text.length;
        return;
      }
      const parsed = tryParse(trimmed);
      if (parsed.ok) handlers.onValue(parsed.value);
      else handlers.onText(text);
    },
    end(): void {
      if (!document) return;
      const parsed = tryParse(document.join('\n'));
      if (parsed.ok) {
        document = undefined;
        documentChars = 0;
        handlers.onValue(parsed.value);
      } else {
        abandonDocument();
      }
    },
  };
}
