" The tree buffer of the sessiontree plugin (sessiontree://tree).
if exists('b:current_syntax')
  finish
endif

syntax match sessiontreeTitle /\%1l.*/
syntax match sessiontreeHelp /\%2l.*/
syntax match sessiontreeOnPath /●/ nextgroup=sessiontreeKind,sessiontreeRun skipwhite
syntax match sessiontreeOffPath /○/ nextgroup=sessiontreeKind,sessiontreeRun skipwhite
" The kind of entry ("user:", "compaction:"), after the marker; not a run's "… 4 entries from".
syntax match sessiontreeKind /\%(… \)\@![^: ][^:]*:/ contained
syntax match sessiontreeRun /… [0-9,]\+ entries from/ contained nextgroup=sessiontreeKind skipwhite
syntax match sessiontreeLabel / \[[^\]]*\]\%( ← leaf\)\?$/ contains=sessiontreeLeaf
syntax match sessiontreeLeaf /← leaf$/
syntax match sessiontreeElided /^ *»[0-9]\+/
syntax match sessiontreePending /^·$/

highlight default link sessiontreeTitle Title
highlight default link sessiontreeHelp Comment
highlight default link sessiontreeOnPath Special
highlight default link sessiontreeOffPath Comment
highlight default link sessiontreeKind Statement
highlight default link sessiontreeRun Folded
highlight default link sessiontreeLabel Identifier
highlight default link sessiontreeLeaf WarningMsg
highlight default link sessiontreeElided Comment
highlight default link sessiontreePending Comment

let b:current_syntax = 'sessiontree'
