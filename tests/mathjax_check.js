// Typeset every formula of the built docs site with the MathJax that the site serves
// (input/tex, AMS tags) and print the failures as JSON: [{where, tex, error}].
// Used by tests/test_docs_render.py; argv[2] is the MathJax distribution directory.
const mj = process.argv[2];
const fs = require('fs');
const items = JSON.parse(fs.readFileSync(0, 'utf8'));
require(mj + '/es5/node-main.js').init({
  loader: {paths: {mathjax: mj + '/es5'}, load: ['input/tex']},
  tex: {tags: 'ams', formatError: (jax, err) => { throw err; }},
}).then(async (MathJax) => {
  const errors = [];
  for (const it of items) {
    try {
      // the promise form lets autoloaded extensions (\boldsymbol, \cancel, ...) load first
      const mml = await MathJax.tex2mmlPromise(it.tex, {display: it.display});
      if (/<merror|mathcolor="red"/.test(mml)) errors.push({where: it.where, tex: it.tex.slice(0, 200), error: "undefined control sequence or error node: " + (mml.match(/<mtext[^>]*mathcolor="red"[^>]*>([^<]*)/) || ["", ""])[1]});
    } catch (e) {
      errors.push({where: it.where, tex: it.tex.slice(0, 200), error: String(e.message || e)});
    }
    MathJax.texReset && MathJax.texReset();
  }
  process.stdout.write(JSON.stringify(errors));
}).catch((e) => { console.error(e); process.exit(2); });
