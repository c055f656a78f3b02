// `infill serve` prints the playground's address on startup; this finds it in the
// process output, which may arrive in arbitrary chunks.

const URL_PATTERN = /\bhttps?:\/\/[^\s"'<>]+/;

export function findUrl(text: string): string | undefined {
  const match = URL_PATTERN.exec(text);
  if (!match) {
    return undefined;
  }
  // Trailing punctuation belongs to the sentence, not the address ("… at http://x:1/.").
  return match[0].replace(/[.,;:)\]]+$/, '');
}

/** Accumulates output until a complete line with an address has been seen. */
export class UrlWatcher {
  private buffer = '';

  /** Returns the address once a line containing it is complete. */
  push(chunk: string): string | undefined {
    this.buffer += chunk;
    const complete = this.buffer.lastIndexOf('\n');
    if (complete < 0) {
      return undefined;
    }
    const url = findUrl(this.buffer.slice(0, complete));
    // Only the unfinished tail is needed for later chunks.
    this.buffer = this.buffer.slice(complete + 1);
    return url;
  }
}
