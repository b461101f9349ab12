// Untrusted text on its way to a terminal (spec values quoted in errors, YAML error excerpts, agent output in
// status messages): control characters are shown escaped, never interpreted — an ESC or OSC sequence cannot
// restyle or retitle the terminal, a raw newline cannot split one error over lines — and long text is cut.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export function printable(text: string, max = 1000): string {
  const over = text.length - max;
  const cut = over > 0 ? text.slice(0, max) : text;
  const escaped = cut.replace(CONTROL, (c) => NAMED[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return over > 0 ? `${escaped}… (${over} more characters)` : escaped;
}
