// Minimal typing of mvdan-sh (GopherJS build of mvdan.cc/sh, no bundled types): what facts.ts uses.
declare module 'mvdan-sh' {
  const sh: {
    syntax: {
      NewParser(...opts: unknown[]): { Parse(src: string, name: string): unknown };
      Walk(node: unknown, f: (node: unknown) => boolean): void;
      NodeType(node: unknown): string;
    };
  };
  export default sh;
}
