// GraphiQL opened from the console starts with the console's token in its headers editor. The token lives
// only in the tab's sessionStorage (the console's sign-in keeps it there), so the page reads it in the browser
// just before GraphiQL renders: the server never sees it in a URL and never writes it into the page.
import type { renderGraphiQL as RenderGraphiQL } from '@graphql-yoga/render-graphiql';

/** The sessionStorage key the console keeps its token under (console/src/api.ts). */
export const CONSOLE_TOKEN_KEY = 'governance-console.token';

const RENDER_CALL = 'YogaGraphiQL.renderYogaGraphiQL(';

const PREFILL = `(function () {
  var token = sessionStorage.getItem(${JSON.stringify(CONSOLE_TOKEN_KEY)});
  if (!token) return;
  var render = YogaGraphiQL.renderYogaGraphiQL;
  YogaGraphiQL.renderYogaGraphiQL = function (root, options) {
    return render(root, Object.assign({}, options, {
      headers: JSON.stringify({ Authorization: 'Bearer ' + token }, null, 2),
      defaultEditorToolsVisibility: 'headers'
    }));
  };
})();
`;

export function withConsoleToken(render: typeof RenderGraphiQL): typeof RenderGraphiQL {
  return (options) => {
    const page = render(options);
    const at = page.indexOf(RENDER_CALL);
    // A GraphiQL build that renders differently still works; it just opens without the token.
    return at < 0 ? page : page.slice(0, at) + PREFILL + page.slice(at);
  };
}
