"""Every page at 390 x 844 (issue 38, defects 2 and 9): no text inside a control wider than
the control, every tap target at least 24 x 24 px (WCAG 2.5.8), no row's status or action off
the screen, and the Runs and Conversations filters folded behind a "Filters" button."""

import pytest

from apps.tools.models import McpServer
from tests.activity.factories import run_factory
from tests.factories import api_key_factory
from tests.knowledge.conftest import make_file_document

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = ("/overview/", "/conversations/", "/users/", "/runs/", "/usage/", "/knowledge/",
         "/tools/", "/webhooks/", "/agents/", "/api-keys/", "/team/")  # fmt: skip

# Text (value, else placeholder) wider than the room its control gives it; tap targets
# smaller than 24 x 24 px that are not inline in a sentence (WCAG 2.5.8's exception); rows
# whose last cell ends past the screen's edge.
MEASURE = """() => {
  const visible = e => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && !e.closest('.visually-hidden'); };
  const probe = document.createElement('span');
  probe.style.cssText = 'position:absolute;white-space:pre;visibility:hidden';
  document.body.appendChild(probe);
  const clipped = [];
  for (const e of document.querySelectorAll('main input:not([type=checkbox]):not([type=radio]):not([type=hidden]):not([type=file]), main select')) {
    if (!visible(e)) continue;
    const s = getComputedStyle(e);
    const text = e.tagName === 'SELECT' ? (e.options[e.selectedIndex] || {}).text || '' : (e.value || e.placeholder || '');
    probe.style.font = s.font;
    probe.textContent = text;
    const room = e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight) - (e.tagName === 'SELECT' ? 18 : 0);
    if (probe.getBoundingClientRect().width > room + 1) clipped.push(`${e.name || e.id}: "${text}" needs ${Math.round(probe.getBoundingClientRect().width)} px, has ${Math.round(room)}`);
  }
  probe.remove();
  const small = [];
  for (const e of document.querySelectorAll('main a[href], main button, main input[type=checkbox], main input[type=radio], main select, main summary')) {
    if (!visible(e)) continue;
    if (e.tagName === 'A' && e.closest('p, li.muted, .muted, small, dd, .hint') && !e.classList.contains('btn')) continue;
    if (e.closest('svg, .chart, .chart-data')) continue;
    const r = e.getBoundingClientRect();
    if (r.width < 24 || r.height < 24) small.push(`${e.tagName.toLowerCase()} "${(e.innerText || e.getAttribute('aria-label') || e.name || '').trim().slice(0, 30)}" ${Math.round(r.width)}x${Math.round(r.height)}`);
  }
  const off = [];
  for (const cell of document.querySelectorAll('main tbody tr td.actions, main tbody tr td[data-label=Status]')) {
    if (!visible(cell)) continue;
    const r = cell.getBoundingClientRect();
    if (r.right > window.innerWidth + 1) off.push(`${cell.closest('tr').id || 'row'} ${cell.dataset.label} right=${Math.round(r.right)}`);
  }
  return {clipped, small, off};
}"""


@pytest.fixture
def phone(console_page, agent, owner, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    make_file_document(agent, b"# Steel\n\nGrades.\n", "Steel JIS comparison table.md")
    McpServer.objects.create(agent=agent, name="Orders", url="https://orders.example.com/mcp",
                             status="connected", enabled=True, tool_count=2)  # fmt: skip
    api_key_factory(agent=agent, scopes=["runs:read", "knowledge:write"], created_by=owner,
                    name="Production backend")  # fmt: skip
    run_factory(agent=agent)
    console_page.set_viewport_size({"width": 390, "height": 844})
    return console_page


@pytest.mark.parametrize("path", PAGES)
def test_a_page_fits_a_phone(phone, path):
    phone.goto(f"{phone.live_server_url}{path}")
    found = phone.evaluate(MEASURE)
    assert found == {"clipped": [], "small": [], "off": []}


@pytest.mark.parametrize("path", ["/runs/", "/conversations/"])
def test_list_filters_fold_behind_a_button(phone, path):
    phone.goto(f"{phone.live_server_url}{path}")
    toggle = phone.get_by_role("button", name="Filters")
    assert toggle.is_visible()
    form = phone.locator("form.filters").first
    assert not form.is_visible()
    toggle.click()
    assert form.is_visible()
