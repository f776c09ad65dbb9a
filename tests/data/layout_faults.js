// The faults of layout a person on a narrow screen would see, element by element: run by
// tests/test_web_layout_browser.py in each page (a function for Playwright's page.evaluate).
() => {
  const width = document.documentElement.clientWidth;
  const faults = [];
  const name = (el) => {
    let text = (el.innerText || el.value || '').trim().replace(/\s+/g, ' ').slice(0, 40);
    return el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
      (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '') +
      (text ? ' "' + text + '"' : '');
  };
  if (document.documentElement.scrollWidth > width) {
    faults.push('the document is ' + document.documentElement.scrollWidth + ' px wide, the screen ' + width);
  }
  const scrolled = (el) => {  // inside a frame that scrolls sideways: reachable, not overflowing
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      const overflow = getComputedStyle(up).overflowX;
      if (overflow === 'auto' || overflow === 'scroll') return true;
    }
    return false;
  };
  const beyond = (el) => {
    if (!el.checkVisibility({visibilityProperty: true})) return false;  // a closed <details>
    const box = el.getBoundingClientRect();
    return (box.width > 0 || box.height > 0) && (box.right > width + 1 || box.left < -1);
  };
  for (const el of document.body.querySelectorAll('*')) {
    if (!beyond(el) || scrolled(el)) continue;
    if (el.parentElement && el.parentElement !== document.body && beyond(el.parentElement)) continue;
    const box = el.getBoundingClientRect();
    faults.push(name(el) + ' reaches ' + Math.round(box.left) + '..' + Math.round(box.right) + ' px');
  }
  const textBox = (label, input) => {  // the first line of a label's own text
    const walker = document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.textContent.trim() || input.contains(node)) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const boxes = range.getClientRects();
      if (boxes.length) return boxes[0];
    }
    return null;
  };
  for (const input of document.querySelectorAll('input[type=checkbox], input[type=radio]')) {
    const box = input.getBoundingClientRect();
    if (!box.width || !input.checkVisibility({visibilityProperty: true})) continue;
    const label = input.closest('label') || (input.id && document.querySelector('label[for="' + input.id + '"]'));
    if (!label) continue;
    const text = textBox(label, input);
    if (!text) continue;
    const gap = text.left >= box.right ? text.left - box.right : box.left - text.right;
    const drift = Math.abs((text.top + text.bottom) / 2 - (box.top + box.bottom) / 2);
    if (gap > 16 || gap < -1 || drift > box.height) {
      faults.push('the checkbox ' + name(input) + ' is ' + Math.round(gap) + ' px beside and ' +
                  Math.round(drift) + ' px off the line of its label ' + name(label));
    }
  }
  for (const button of document.querySelectorAll('button, a.button, input[type=submit]')) {
    const box = button.getBoundingClientRect();
    if (!box.width || !button.checkVisibility({visibilityProperty: true})) continue;
    const range = document.createRange();
    range.selectNodeContents(button);
    const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
    if (lines.size > 1) faults.push('the label of ' + name(button) + ' breaks over ' + lines.size + ' lines');
  }
  return faults;
}
